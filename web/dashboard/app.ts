import {
  answerTask,
  ApiError,
  cancelTask,
  getTask,
  type KillSwitchPanel,
  listTasks,
  logout,
  type Session,
  session,
  type TaskPage,
  type TaskStatus,
  type TaskSummary,
} from './api.js';
import { badge, formatDuration, formatTime, h, replace } from './dom.js';
import { noOperationsYet } from './domain-text.js';
import { questionForm } from './form.js';
import { showKillSwitch } from './kill-switch.js';
import { operationsTable, showOperations } from './operations.js';
import { showOverview } from './overview.js';
import { timeline } from './timeline.js';

/**
 * The dashboard page: a task list (filters, keyset paging, live) at `/dashboard` and a task page at
 * `/dashboard/tasks/<id>`. The first view renders from the data the server wrote into the page (`api.ts`, issue 26
 * item 15), so it needs no request; live updates come from one EventSource on `/dashboard/api/events` (the server's
 * event feed); the page never polls — the browser's EventSource reconnects by itself.
 */

const STATUSES: TaskStatus[] = ['working', 'input_required', 'completed', 'failed', 'cancelled'];
const main = document.getElementById('main') as HTMLElement;
const live = document.getElementById('live') as HTMLElement;
let current:
  | { kind: 'list' | 'task' | 'operations' | 'overview' | 'kill-switch'; refresh: (taskId: string) => void; killSwitch?: (next: KillSwitchPanel) => void }
  | undefined;

function elapsed(task: TaskSummary): string {
  const end = task.status === 'completed' || task.status === 'failed' || task.status === 'cancelled' ? task.lastUpdatedAt : Date.now();
  return formatDuration(end - task.createdAt);
}

function progressBar(task: TaskSummary): HTMLElement | null {
  if (!task.progress) return null;
  const { done, total } = task.progress;
  return h('progress', { max: String(total), value: String(done), 'aria-label': `Progress ${done} of ${total}` });
}

/** Collapse many events into one refresh per animation frame-ish window. */
function debounce(run: () => void, ms: number): () => void {
  let timer: number | undefined;
  return () => {
    if (timer !== undefined) return;
    timer = window.setTimeout(() => {
      timer = undefined;
      run();
    }, ms);
  };
}

function filtersFromUrl(): URLSearchParams {
  const params = new URLSearchParams(location.search);
  const kept = new URLSearchParams();
  for (const name of ['status', 'tool', 'q', 'from', 'to', 'before']) {
    const value = params.get(name);
    if (value) kept.set(name, value);
  }
  return kept;
}

function toLocalInput(ms: string | null): string | undefined {
  if (!ms) return undefined;
  const date = new Date(Number(ms));
  const pad = (value: number): string => String(value).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

function filterForm(params: URLSearchParams): HTMLFormElement {
  const status = h(
    'select',
    { id: 'f-status', name: 'status' },
    h('option', { value: '' }, 'any'),
    ...STATUSES.map((value) => h('option', { value, selected: params.get('status') === value }, value.replace('_', ' '))),
  );
  const tool = h('input', { id: 'f-tool', name: 'tool', value: params.get('tool') ?? undefined, placeholder: 'e.g. analyze_logs' });
  const text = h('input', { id: 'f-q', name: 'q', type: 'search', value: params.get('q') ?? undefined, placeholder: 'id, tool or message' });
  const from = h('input', { id: 'f-from', name: 'from', type: 'datetime-local', value: toLocalInput(params.get('from')) });
  const to = h('input', { id: 'f-to', name: 'to', type: 'datetime-local', value: toLocalInput(params.get('to')) });
  const form = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter tasks' },
    h('div', { class: 'field' }, h('label', { for: 'f-status' }, 'Status'), status),
    h('div', { class: 'field' }, h('label', { for: 'f-tool' }, 'Tool'), tool),
    h('div', { class: 'field' }, h('label', { for: 'f-q' }, 'Text'), text),
    h('div', { class: 'field' }, h('label', { for: 'f-from' }, 'Created from'), from),
    h('div', { class: 'field' }, h('label', { for: 'f-to' }, 'Created before'), to),
    h('button', { type: 'submit' }, 'Apply'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    if (status.value) next.set('status', status.value);
    if (tool.value.trim()) next.set('tool', tool.value.trim());
    if (text.value.trim()) next.set('q', text.value.trim());
    if (from.value) next.set('from', String(new Date(from.value).getTime()));
    if (to.value) next.set('to', String(new Date(to.value).getTime()));
    navigate(`/dashboard${next.size > 0 ? `?${next.toString()}` : ''}`);
  });
  return form;
}

function taskRow(task: TaskSummary): HTMLTableRowElement {
  return h(
    'tr',
    { 'data-task-id': task.taskId },
    h('td', {}, badge(task.status)),
    h(
      'td',
      {},
      h('a', { href: `/dashboard/tasks/${encodeURIComponent(task.taskId)}`, class: 'task-link' }, task.tool),
      h('div', { class: 'mono small' }, task.taskId),
    ),
    h('td', {}, task.generation),
    h('td', { class: 'small' }, task.owner),
    h('td', { class: 'small' }, formatTime(task.createdAt)),
    h('td', { class: 'small' }, formatTime(task.lastUpdatedAt)),
    h('td', { class: 'small' }, elapsed(task)),
    h('td', { class: 'message' }, progressBar(task), h('span', {}, task.statusMessage ?? '')),
  );
}

async function showList(): Promise<void> {
  const params = filtersFromUrl();
  const body = h('tbody', {});
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages' });
  const note = h('p', { class: 'small', role: 'status' });
  const table = h(
    'table',
    { class: 'tasks' },
    h('caption', {}, 'Tasks, newest first'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...['Status', 'Tool / task id', 'Generation', 'Owner', 'Created', 'Last update', 'Elapsed', 'Status message'].map((title) =>
          h('th', { scope: 'col' }, title),
        ),
      ),
    ),
    body,
  );
  replace(main, h('h1', {}, 'Tasks'), filterForm(params), note, table, pager);
  document.title = 'Tasks · mcp-tasks';

  const firstPage = !params.has('before');
  const load = async (): Promise<void> => {
    const query = new URLSearchParams(params);
    query.set('limit', '50');
    const page = await listTasks(query);
    replace(body, ...page.tasks.map(taskRow));
    note.textContent = page.tasks.length === 0 ? 'No tasks match.' : `${page.tasks.length} task${page.tasks.length === 1 ? '' : 's'} on this page.`;
    const links: HTMLElement[] = [];
    if (!firstPage) {
      const newest = new URLSearchParams(params);
      newest.delete('before');
      links.push(h('a', { href: `/dashboard${newest.size > 0 ? `?${newest.toString()}` : ''}` }, '← Newest'));
    }
    if (page.nextBefore !== null) {
      const older = new URLSearchParams(params);
      older.set('before', String(page.nextBefore));
      links.push(h('a', { href: `/dashboard?${older.toString()}`, rel: 'next' }, 'Older →'));
    }
    replace(pager, ...links);
  };
  await load();
  const reload = debounce(() => void load().catch(showError), 150);
  current = {
    kind: 'list',
    // The first page follows every change (new tasks appear on top); an older page only updates the rows it
    // shows, so what the reader is looking at never shifts.
    refresh: (taskId) => {
      if (firstPage || body.querySelector(`tr[data-task-id="${CSS.escape(taskId)}"]`)) reload();
    },
  };
}

/** The task page's domain-outcome half: its ledger rows (or a plain "none"), beside the task state. */
function domainOutcome(page: TaskPage): HTMLElement {
  const status = h('p', { class: 'small', role: 'status', 'aria-live': 'polite' });
  const body =
    page.operations.length === 0 ? h('p', {}, noOperationsYet(page)) : operationsTable(page.operations, status, false, 'Operations of this task, oldest first');
  return h('section', { class: 'domain', 'aria-labelledby': 'ops-h' }, h('h2', { id: 'ops-h' }, 'Domain outcome'), body, status);
}

function jsonBlock(title: string, value: { text: string; truncated: boolean; chars: number } | null, id: string): HTMLElement | null {
  if (!value) return null;
  return h(
    'section',
    { 'aria-labelledby': id },
    h('h2', { id }, title),
    h('pre', { class: 'json', tabindex: '0' }, value.text),
    value.truncated
      ? h('p', { class: 'small' }, `Cut at ${value.text.length} of ${value.chars} characters; read the full value through the MCP API (tasks/result).`)
      : null,
  );
}

type Bounded = { text: string; truncated: boolean; chars: number };

/** A collapsed block: its summary names what it holds and its size. */
function collapsed(summary: string, value: Bounded, className: string): HTMLElement {
  return h(
    'details',
    {},
    h('summary', {}, `${summary} (${value.chars.toLocaleString('en')} characters)`),
    h('pre', { class: className, tabindex: '0' }, value.text),
    value.truncated
      ? h('p', { class: 'small' }, `Cut at ${value.text.length} of ${value.chars} characters; read the full value through the MCP API (tasks/result).`)
      : null,
  );
}

/**
 * The result as a reader takes it (issue 26 item 15): its text as text, with its own line breaks; the structured
 * content and the whole result as JSON below, collapsed. A result without text keeps the JSON block.
 */
function resultSection(page: TaskPage): HTMLElement | null {
  if (!page.result) return null;
  const full = page.fullResult
    ? h(
        'p',
        { class: 'small' },
        'This page shows part of the result: ',
        h('a', { href: page.fullResult.href, class: 'full-result' }, `the full result (${page.fullResult.bytes.toLocaleString('en')} bytes of JSON)`),
        '.',
      )
    : null;
  if (!page.resultText) {
    const block = jsonBlock('Result', page.result, 'res-h');
    block?.append(...(full ? [full] : []));
    return block;
  }
  return h(
    'section',
    { 'aria-labelledby': 'res-h' },
    h('h2', { id: 'res-h' }, 'Result'),
    full,
    h('pre', { class: 'result-text', tabindex: '0' }, page.resultText.text),
    page.resultText.truncated
      ? h(
          'p',
          { class: 'small' },
          `Cut at ${page.resultText.text.length} of ${page.resultText.chars} characters; read the full result through the MCP API (tasks/result).`,
        )
      : null,
    page.resultStructured ? collapsed('Structured content', page.resultStructured, 'json') : null,
    collapsed('The whole result as JSON', page.result, 'json'),
  );
}

function questionsSection(page: TaskPage, refresh: () => Promise<void>): HTMLElement | null {
  if (page.questions.length === 0) return null;
  const section = h('section', { class: 'questions', 'aria-labelledby': 'q-h' }, h('h2', { id: 'q-h' }, 'Input required'));
  page.questions.forEach((question, index) => {
    // novalidate: the page's own checks run (and say what is wrong) instead of the browser's bubbles.
    const form = h('form', { class: 'answer', 'data-key': question.key, novalidate: true });
    const errors = h('div', { class: 'error', role: 'alert' });
    if (question.mode === 'url') {
      form.append(
        h('p', { class: 'question-message' }, question.message),
        h('p', { class: 'mono' }, question.url ?? ''),
        h('p', { class: 'small' }, 'This question is answered at the address above, not here.'),
      );
    }
    const built = question.mode === 'form' ? questionForm(question, index) : undefined;
    if (built) form.append(built.element);
    const send = h('button', { type: 'submit', disabled: !page.permissions.answer || question.mode === 'url' }, 'Send answer');
    const decline = h('button', { type: 'button', class: 'secondary', disabled: !page.permissions.answer }, 'Decline');
    form.append(errors, h('div', { class: 'actions' }, send, decline));
    const submit = async (answer: Record<string, unknown>): Promise<void> => {
      send.disabled = decline.disabled = true;
      try {
        await answerTask(page.task.taskId, { [question.key]: answer });
        await refresh();
      } catch (error) {
        errors.textContent = (error as Error).message;
        send.disabled = decline.disabled = false;
      }
    };
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      if (!built) return;
      const collected = built.collect();
      if ('errors' in collected) {
        replace(errors, ...collected.errors.map((message) => h('p', {}, message)));
        return;
      }
      void submit({ action: 'accept', content: collected.content });
    });
    decline.addEventListener('click', () => void submit({ action: 'decline' }));
    section.append(form);
  });
  if (!page.permissions.answer) section.append(h('p', { class: 'small' }, 'Read-only: answering needs the tasks:answer scope.'));
  return section;
}

async function showTask(taskId: string): Promise<void> {
  const render = async (): Promise<void> => {
    let page: TaskPage;
    try {
      page = await getTask(taskId);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        replace(
          main,
          h('h1', {}, 'Task not found'),
          h('p', {}, 'There is no task with this id that you can see.'),
          h('p', {}, h('a', { href: '/dashboard' }, 'Back to the task list')),
        );
        document.title = 'Task not found · mcp-tasks';
        current = undefined;
        return;
      }
      throw error;
    }
    const { task } = page;
    const cancel = page.permissions.cancel ? h('button', { type: 'button', id: 'cancel', class: 'danger' }, 'Cancel task') : null;
    cancel?.addEventListener('click', () => {
      cancel.disabled = true;
      void cancelTask(task.taskId).then(render).catch(showError);
    });
    const facts: Array<[string, string]> = [
      ['Task id', task.taskId],
      ['Generation', `${task.generation} (${task.protocolVersion})`],
      ['Owner', task.owner],
      ['Created', formatTime(task.createdAt)],
      ['Last update', formatTime(task.lastUpdatedAt)],
      ['Elapsed', elapsed(task)],
      ['Runs', String(task.attempt)],
      ['Expires', task.expiresAt === null ? 'never' : formatTime(task.expiresAt)],
    ];
    replace(
      main,
      h('p', {}, h('a', { href: '/dashboard' }, '← All tasks')),
      h('h1', {}, task.tool, ' ', badge(task.status)),
      h(
        'section',
        { class: 'status', 'aria-labelledby': 'st-h' },
        h('h2', { id: 'st-h', class: 'visually-hidden' }, 'Status'),
        progressBar(task),
        h('p', { id: 'status-message', class: 'message' }, task.statusMessage ?? ''),
        cancel,
      ),
      h(
        'dl',
        { class: 'facts' },
        ...facts.flatMap(([term, value]) => [h('dt', {}, term), h('dd', { class: term === 'Task id' || term === 'Owner' ? 'mono' : undefined }, value)]),
      ),
      h(
        'div',
        { class: 'side-by-side' },
        h(
          'section',
          { 'aria-labelledby': 'ts-h' },
          h('h2', { id: 'ts-h' }, 'Task state'),
          h(
            'p',
            {},
            badge(task.status),
            ' ',
            task.status === 'completed' ? 'The task completed: a result is ready. This says nothing about what a system of record did.' : '',
          ),
        ),
        domainOutcome(page),
      ),
      questionsSection(page, render),
      resultSection(page),
      jsonBlock('Error', page.error, 'err-h'),
      jsonBlock('Arguments', task.arguments, 'args-h'),
      h('section', { 'aria-labelledby': 'tl-h' }, h('h2', { id: 'tl-h' }, 'Timeline'), timeline(page.events)),
    );
    document.title = `${task.tool} ${task.status} · mcp-tasks`;
  };
  await render();
  const reload = debounce(() => void render().catch(showError), 100);
  current = { kind: 'task', refresh: (changed) => changed === taskId && reload() };
}

function showError(error: unknown): void {
  live.textContent = `Error: ${(error as Error).message}`;
}

/** Render the view of the URL; `focus` moves focus to it (after a navigation, not on first load: the skip link stays first). */
async function route(focus = true): Promise<void> {
  current = undefined;
  const match = /^\/dashboard\/tasks\/([^/]+)$/.exec(location.pathname);
  try {
    if (match) await showTask(decodeURIComponent(match[1] as string));
    else if (location.pathname === '/dashboard/operations') {
      const refresh = debounce(await showOperations(main, navigate), 300);
      current = { kind: 'operations', refresh };
    } else if (location.pathname === '/dashboard/kill-switch') {
      await showKillSwitchPage();
    } else if (location.pathname === '/dashboard/overview') {
      const refresh = debounce(await showOverview(main), 1000);
      current = { kind: 'overview', refresh };
    } else await showList();
  } catch (error) {
    showError(error);
  }
  if (focus) main.focus({ preventScroll: true });
}

async function showKillSwitchPage(): Promise<void> {
  try {
    const apply = await showKillSwitch(main);
    current = { kind: 'kill-switch', refresh: () => undefined, killSwitch: apply };
  } catch (error) {
    // 404: this viewer has no admin:read; the page says so as for an unknown task.
    if (!(error instanceof ApiError && error.status === 404)) throw error;
    replace(
      main,
      h('h1', {}, 'Not found'),
      h('p', {}, 'There is nothing here that you can see.'),
      h('p', {}, h('a', { href: '/dashboard' }, 'Back to the task list')),
    );
    document.title = 'Not found · mcp-tasks';
  }
}

function navigate(url: string): void {
  history.pushState(null, '', url);
  void route();
}

function connect(): void {
  const source = new EventSource('/dashboard/api/events');
  source.addEventListener('open', () => (live.textContent = 'Live'));
  source.addEventListener('error', () => (live.textContent = 'Reconnecting…'));
  source.addEventListener('task', (message) => {
    const { event } = JSON.parse((message as MessageEvent<string>).data) as { event: { taskId: string } };
    current?.refresh(event.taskId);
  });
  // Only sent to viewers who may see the kill switch.
  source.addEventListener('kill-switch', (message) => current?.killSwitch?.(JSON.parse((message as MessageEvent<string>).data) as KillSwitchPanel));
}

async function start(): Promise<void> {
  let who: Session;
  try {
    who = await session();
  } catch (error) {
    showError(error);
    return;
  }
  (document.getElementById('who') as HTMLElement).textContent = who.owner;
  if (who.killSwitch.see) document.querySelector('nav.views')?.append(h('a', { href: '/dashboard/kill-switch' }, 'Kill switch'));
  const button = document.getElementById('logout') as HTMLButtonElement;
  if (who.signedIn) {
    button.hidden = false;
    button.addEventListener('click', () => void logout().then(() => location.assign('/dashboard/login')));
  }
  // Same-document navigation for links inside the dashboard (keyboard and mouse alike).
  document.addEventListener('click', (event) => {
    const link = (event.target as Element).closest('a');
    if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
    const url = new URL(link.href);
    // The API's answers (the full result) open as themselves, not as a view of the page.
    const view = url.pathname.startsWith('/dashboard') && !url.pathname.startsWith('/dashboard/login') && !url.pathname.startsWith('/dashboard/api/');
    if (url.origin !== location.origin || !view) return;
    event.preventDefault();
    navigate(url.pathname + url.search);
  });
  window.addEventListener('popstate', () => void route());
  connect();
  await route(false);
}

void start();
