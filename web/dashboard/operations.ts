import { listOperations, type Operation, reconcileOperation } from './api.js';
import { formatTime, h, replace } from './dom.js';

/**
 * The operations view (`/dashboard/operations`) and the operations part of a task page: ledger rows with their
 * outcome (what the system of record answered), kept visibly apart from task status badges, and a "Reconcile" button
 * on open rows the viewer may reconcile (the server decides; the button only mirrors it).
 */

const OUTCOME_TEXT: Record<Operation['status'], string> = {
  pending: 'pending',
  confirmed: 'confirmed by the system of record',
  failed: 'failed: not applied',
  unknown: 'unknown: needs reconciling',
};

/** The outcome of an operation, shaped unlike a task badge (square, with a mark) so the two are never confused. */
export function outcomeBadge(status: Operation['status']): HTMLElement {
  const mark = { pending: '…', confirmed: '✓', failed: '✗', unknown: '?' }[status];
  return h('span', { class: `outcome o-${status}` }, h('span', { 'aria-hidden': 'true' }, `${mark} `), OUTCOME_TEXT[status]);
}

const FILTERS: Array<[string, string]> = [
  ['unknown', 'unknown (needs reconciling)'],
  ['pending,unknown', 'open (pending or unknown)'],
  ['pending', 'pending'],
  ['confirmed', 'confirmed'],
  ['failed', 'failed'],
  ['all', 'all'],
];

/** A Reconcile button for `operation` that reports into `status` and hands the new row to `done`. */
function reconcileButton(operation: Operation, status: HTMLElement, done: (next: Operation) => void): HTMLButtonElement | null {
  if (!operation.mayReconcile) return null;
  const button = h('button', { type: 'button', class: 'reconcile', 'aria-label': `Reconcile ${operation.effect} on ${operation.target}` }, 'Reconcile');
  button.addEventListener('click', () => {
    button.disabled = true;
    status.textContent = `Asking the system of record about ${operation.effect} on ${operation.target}…`;
    reconcileOperation(operation.operationId)
      .then((answer) => {
        const verdict =
          answer.verdict === 'unknown'
            ? `still unknown (${answer.detail ?? 'no answer'})`
            : answer.verdict === 'confirmed'
              ? 'confirmed'
              : 'not applied (recorded as failed)';
        status.textContent = `Reconciled ${answer.operation.effect} on ${answer.operation.target}: ${verdict}.`;
        done(answer.operation);
      })
      .catch((error: unknown) => {
        status.textContent = `Reconcile failed: ${(error as Error).message}`;
        button.disabled = false;
      });
  });
  return button;
}

/** The first facts of a receipt in one line (its top-level strings and numbers, `name value`), at most 120 characters. */
function receiptHeadline(text: string): string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // A receipt cut at the page's bound is not whole JSON: its text starts the line instead.
    value = undefined;
  }
  const facts =
    value && typeof value === 'object' && !Array.isArray(value)
      ? Object.entries(value).flatMap(([name, field]) => (typeof field === 'string' || typeof field === 'number' ? [`${name} ${String(field)}`] : []))
      : [];
  const line = facts.length > 0 ? facts.join(' · ') : text.replace(/\s+/g, ' ');
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

/**
 * A receipt, readable in a narrow cell (issue 26 item 16; it was a fixed-height box cut at the cell's edge): its
 * first facts as the summary line, wrapped anywhere, and the whole JSON when opened, at its full height.
 */
function receiptBlock(receipt: Operation['receipt']): HTMLElement | null {
  if (!receipt) return null;
  return h(
    'details',
    { class: 'receipt' },
    h('summary', {}, h('span', { class: 'visually-hidden' }, 'Receipt: '), receiptHeadline(receipt.text)),
    h('pre', { class: 'json small', tabindex: '0' }, receipt.text),
    receipt.truncated ? h('p', { class: 'small' }, `Cut at ${receipt.text.length} of ${receipt.chars} characters.`) : null,
  );
}

/** One ledger row as a table row (`withTask`: a link to its task, for the operations view). */
function operationRow(operation: Operation, status: HTMLElement, withTask: boolean, changed: (next: Operation) => void): HTMLTableRowElement {
  return h(
    'tr',
    { 'data-operation-id': operation.operationId },
    h('td', {}, outcomeBadge(operation.status)),
    h('td', {}, h('strong', {}, operation.effect), h('div', { class: 'mono small' }, operation.target)),
    withTask
      ? h(
          'td',
          {},
          h('a', { href: `/dashboard/tasks/${encodeURIComponent(operation.taskId)}` }, operation.tool),
          h('div', { class: 'mono small' }, operation.taskId),
        )
      : null,
    withTask ? h('td', { class: 'small' }, operation.owner) : null,
    h('td', { class: 'small' }, formatTime(operation.updatedAt)),
    h('td', { class: 'message' }, operation.detail ?? '', receiptBlock(operation.receipt)),
    h('td', {}, reconcileButton(operation, status, changed)),
  );
}

/** A table of ledger rows, each replaced in place after a reconcile. */
export function operationsTable(operations: Operation[], status: HTMLElement, withTask: boolean, caption: string, after?: () => void): HTMLTableElement {
  const add = (operation: Operation): HTMLTableRowElement => {
    const row = operationRow(operation, status, withTask, (next) => {
      row.replaceWith(add(next));
      after?.();
    });
    return row;
  };
  const body = h('tbody', {}, ...operations.map(add));
  const heads = ['Outcome', 'Effect / target', ...(withTask ? ['Task', 'Owner'] : []), 'Updated', 'Detail / receipt', 'Action'];
  return h(
    'table',
    { class: 'tasks operations' },
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, ...heads.map((title) => h('th', { scope: 'col' }, title)))),
    body,
  );
}

/**
 * `/dashboard/operations?status=…`: the ledger rows the viewer sees (default: `unknown`). Returns the refresh the
 * page's live feed calls (a task's change may have settled one of its operations).
 */
export async function showOperations(main: HTMLElement, navigate: (url: string) => void): Promise<() => void> {
  const chosen = new URLSearchParams(location.search).get('status') ?? 'unknown';
  const select = h('select', { id: 'o-status', name: 'status' }, ...FILTERS.map(([value, label]) => h('option', { value, selected: value === chosen }, label)));
  const form = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter operations' },
    h('div', { class: 'field' }, h('label', { for: 'o-status' }, 'Outcome'), select),
    h('button', { type: 'submit' }, 'Apply'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    navigate(`/dashboard/operations?status=${encodeURIComponent(select.value)}`);
  });
  const status = h('p', { id: 'reconcile-status', role: 'status', 'aria-live': 'polite' });
  const holder = h('div', {});
  replace(
    main,
    h('h1', {}, 'Domain operations'),
    h(
      'p',
      { class: 'small' },
      'What tools asked systems of record to do, and what those answered. A task can complete while its operation is unknown; reconcile asks the system of record again.',
    ),
    form,
    status,
    holder,
  );
  document.title = 'Operations · mcp-tasks';
  const load = async (): Promise<void> => {
    const { operations } = await listOperations(chosen);
    replace(
      holder,
      operations.length === 0
        ? h('p', {}, 'No operations match.')
        : operationsTable(operations, status, true, `${operations.length} operation${operations.length === 1 ? '' : 's'}, oldest first`),
    );
  };
  await load();
  return () => void load().catch((error: unknown) => (status.textContent = (error as Error).message));
}
