import { changeKillSwitch, getKillSwitch, type KillSwitchPanel } from './api.js';
import { type Child, formatTime, h, replace } from './dom.js';

/**
 * `/dashboard/kill-switch`: the stored kill switch (issue 15 item 6) for viewers with `admin:read` — global or per
 * tool, its fallback, who set it and when — and, for `admin:write`, a form to turn it on (every tool or one; fallback
 * sync or reject; a reason) and a "Turn off" button per switch. The server decides who may do what; the page only
 * mirrors it. Changes made elsewhere (CLI, admin API, another instance) arrive as `kill-switch` events on the page's
 * one event stream: the state part is redrawn, the form keeps what is typed in it.
 */

const ALL = '*';

function fallbackText(fallback: 'sync' | 'reject' | null, panel: KillSwitchPanel): string {
  const effective = fallback ?? panel.defaultFallback;
  const words = effective === 'reject' ? 'reject (-31003)' : 'sync (run inline where allowed)';
  return fallback === null ? `${words}, the server's default` : words;
}

function summary(panel: KillSwitchPanel): string {
  switch (panel.state) {
    case 'off':
      return 'Off: task-augmented calls create tasks as usual.';
    case 'on':
      return 'On for every tool: new task-augmented calls get the fallback; tasks already created run to their end.';
    case 'partial':
      return `On for ${panel.switches.map((row) => row.scope).join(', ')}: new task-augmented calls of these tools get the fallback.`;
    default:
      return 'Unknown: the store has not been readable since this server started.';
  }
}

function stateBlock(panel: KillSwitchPanel, status: HTMLElement, apply: (next: KillSwitchPanel) => void): Child[] {
  const off = (scope: string): HTMLButtonElement | null => {
    if (!panel.mayChange) return null;
    const label = scope === ALL ? 'every tool' : scope;
    const button = h('button', { type: 'button', class: 'secondary', 'data-scope': scope, 'aria-label': `Turn off the kill switch for ${label}` }, 'Turn off');
    button.addEventListener('click', () => {
      button.disabled = true;
      status.textContent = `Turning off the kill switch for ${label}…`;
      changeKillSwitch({ action: 'off', ...(scope === ALL ? {} : { tool: scope }) })
        .then((next) => {
          status.textContent = `Kill switch for ${label} turned off.`;
          apply(next);
        })
        .catch((error: unknown) => {
          status.textContent = `Turning off failed: ${(error as Error).message}`;
          button.disabled = false;
        });
    });
    return button;
  };
  const rows = panel.switches.map((row) =>
    h(
      'tr',
      { 'data-scope': row.scope },
      h('td', {}, row.scope === ALL ? h('strong', {}, 'every tool') : h('span', { class: 'mono' }, row.scope)),
      h('td', {}, fallbackText(row.fallback, panel)),
      h('td', { class: 'message' }, row.reason ?? ''),
      h('td', { class: 'small mono' }, row.setBy),
      h('td', { class: 'small' }, formatTime(row.setAt)),
      panel.mayChange ? h('td', {}, off(row.scope)) : null,
    ),
  );
  const heads = ['Scope', 'Fallback', 'Reason', 'Set by', 'Set at', ...(panel.mayChange ? ['Action'] : [])];
  return [
    h('p', { id: 'ks-state', class: `ks-state ks-${panel.state}`, 'data-state': panel.state }, h('strong', {}, panel.state), ' — ', summary(panel)),
    panel.error ? h('p', { class: 'error' }, `The last read of the store failed (the switches above stay in force): ${panel.error}`) : null,
    rows.length === 0
      ? h('p', { class: 'small' }, 'No switch is on.')
      : h(
          'table',
          { class: 'tasks', id: 'ks-table' },
          h('caption', {}, 'Switches that are on'),
          h('thead', {}, h('tr', {}, ...heads.map((title) => h('th', { scope: 'col' }, title)))),
          h('tbody', {}, ...rows),
        ),
    h('p', { class: 'small' }, panel.readAt === null ? 'Not read yet.' : `Read ${formatTime(panel.readAt)}. A tool's own switch wins over the global one.`),
  ];
}

function turnOnForm(panel: KillSwitchPanel, status: HTMLElement, apply: (next: KillSwitchPanel) => void): HTMLFormElement {
  const tool = h(
    'select',
    { id: 'ks-tool', name: 'tool' },
    h('option', { value: '' }, 'every tool'),
    ...panel.tools.map((name) => h('option', { value: name }, name)),
  );
  const fallback = h(
    'select',
    { id: 'ks-fallback', name: 'fallback' },
    h('option', { value: '' }, `server default (${panel.defaultFallback})`),
    h('option', { value: 'reject' }, 'reject: refuse with -31003'),
    h('option', { value: 'sync' }, 'sync: run inline where the tool allows it'),
  );
  const reason = h('input', { id: 'ks-reason', name: 'reason', maxlength: '500', placeholder: 'e.g. incident 42' });
  const submit = h('button', { type: 'submit', class: 'danger' }, 'Turn on');
  const form = h(
    'form',
    { class: 'filters', id: 'ks-form', 'aria-labelledby': 'ks-on-h' },
    h('div', { class: 'field' }, h('label', { for: 'ks-tool' }, 'Tool'), tool),
    h('div', { class: 'field' }, h('label', { for: 'ks-fallback' }, 'Fallback'), fallback),
    h('div', { class: 'field' }, h('label', { for: 'ks-reason' }, 'Reason (optional)'), reason),
    submit,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    submit.disabled = true;
    const label = tool.value || 'every tool';
    status.textContent = `Turning on the kill switch for ${label}…`;
    changeKillSwitch({ action: 'on', tool: tool.value, fallback: fallback.value, reason: reason.value.trim() })
      .then((next) => {
        status.textContent = `Kill switch for ${label} turned on.`;
        reason.value = '';
        apply(next);
      })
      .catch((error: unknown) => (status.textContent = `Turning on failed: ${(error as Error).message}`))
      .finally(() => (submit.disabled = false));
  });
  return form;
}

/** Show the panel; returns what the live feed calls with a `kill-switch` event's state. */
export async function showKillSwitch(main: HTMLElement): Promise<(next: KillSwitchPanel) => void> {
  const panel = await getKillSwitch();
  const status = h('p', { id: 'ks-status', role: 'status', 'aria-live': 'polite' });
  const holder = h('section', { 'aria-labelledby': 'ks-now-h' });
  const apply = (next: KillSwitchPanel): void => replace(holder, h('h2', { id: 'ks-now-h' }, 'Now'), ...stateBlock(next, status, apply));
  apply(panel);
  replace(
    main,
    h('h1', {}, 'Kill switch'),
    h(
      'p',
      { class: 'small' },
      'While a switch is on, new task-augmented calls of its tools get the fallback instead of a task; tasks already created stay observable, cancellable and answerable. Every instance sees a change within a second.',
    ),
    holder,
    panel.mayChange
      ? h('section', { 'aria-labelledby': 'ks-on-h' }, h('h2', { id: 'ks-on-h' }, 'Turn on'), turnOnForm(panel, status, apply))
      : h('p', { id: 'ks-read-only', class: 'small' }, 'Read-only: changing the kill switch needs the admin:write scope.'),
    status,
  );
  document.title = 'Kill switch · mcp-tasks';
  return apply;
}
