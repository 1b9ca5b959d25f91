import type { OperationRecord } from '../core/ledger.js';
import type { TaskEvent } from '../core/store.js';
import type { InputRequestRecord, JsonObject, JsonValue, TaskRecord } from '../core/task.js';
import { largeResultMetaOf } from '../protocol/result-uri.js';
import { mayReconcile } from '../service/access.js';
import type { ReconcileReport } from '../service/viewer/operations.js';
import type { TaskInspection } from '../service/viewer/viewer.js';
import type { Viewer } from '../service/viewer/viewer.js';
import type { BoundedJson, OperationView, QuestionView, ReconcileView, TaskPageView, TaskSummary } from './wire.js';

/** Longest JSON text of a result, an error or the arguments sent to the page (characters); the rest is cut. */
export const MAX_SHOWN_JSON_CHARS = 64 * 1024;

const PROGRESS = /\((\d+)\/(\d+)\)$/;

export function summaryOf(task: TaskRecord): TaskSummary {
  const match = PROGRESS.exec(task.statusMessage ?? '');
  return {
    taskId: task.taskId,
    seq: task.seq,
    status: task.status,
    tool: task.toolName,
    generation: task.generation,
    owner: task.ownerKey,
    createdAt: task.createdAt,
    lastUpdatedAt: task.lastUpdatedAt,
    statusMessage: task.statusMessage,
    progress: match ? { done: Number(match[1]), total: Number(match[2]) } : null,
    attempt: task.attempt,
  };
}

export function boundedJson(value: JsonValue): BoundedJson {
  return boundedText(JSON.stringify(value, null, 2));
}

function boundedText(text: string): BoundedJson {
  return text.length <= MAX_SHOWN_JSON_CHARS
    ? { text, truncated: false, chars: text.length }
    : { text: text.slice(0, MAX_SHOWN_JSON_CHARS), truncated: true, chars: text.length };
}

/** The text blocks of a `CallToolResult`, joined by a blank line, or `null` when it has none. */
function resultTextOf(result: JsonValue): BoundedJson | null {
  const content = (result as { content?: unknown } | null)?.content;
  if (!Array.isArray(content)) return null;
  const texts = content.flatMap((block) =>
    block && typeof block === 'object' && (block as { type?: unknown }).type === 'text' && typeof (block as { text?: unknown }).text === 'string'
      ? [(block as { text: string }).text]
      : [],
  );
  return texts.length > 0 ? boundedText(texts.join('\n\n')) : null;
}

function structuredOf(result: JsonValue): BoundedJson | null {
  const structured = (result as { structuredContent?: JsonValue } | null)?.structuredContent;
  return structured === undefined || structured === null ? null : boundedJson(structured);
}

/** What an event adds in one line (`null` when its kind says it all). */
function eventDetail(event: TaskEvent): string | null {
  const payload = event.payload ?? {};
  switch (event.kind) {
    case 'status':
      return `${String(payload.from)} → ${String(payload.to ?? event.status)}`;
    case 'message':
      return typeof payload.statusMessage === 'string' ? payload.statusMessage : null;
    case 'attempt':
      return `run ${String(payload.attempt)}`;
    case 'input': {
      const parts = (['added', 'answered', 'retired'] as const).flatMap((name) =>
        Array.isArray(payload[name]) && (payload[name] as JsonValue[]).length > 0 ? [`${name} ${(payload[name] as JsonValue[]).join(', ')}`] : [],
      );
      return parts.length > 0 ? parts.join('; ') : null;
    }
    default:
      return null;
  }
}

function questionOf(request: InputRequestRecord): QuestionView {
  const params = (request.request.params ?? {}) as JsonObject;
  const url = params.mode === 'url';
  return {
    key: request.key,
    message: typeof params.message === 'string' ? params.message : '',
    mode: url ? 'url' : 'form',
    requestedSchema:
      !url && params.requestedSchema && typeof params.requestedSchema === 'object' ? (params.requestedSchema as QuestionView['requestedSchema']) : null,
    url: url && typeof params.url === 'string' ? params.url : null,
  };
}

/** A task page for `viewer` (who decides which operations it may reconcile). */
export function pageOf(inspection: TaskInspection, viewer: Viewer): TaskPageView {
  const { task, events, details, permissions } = inspection;
  const outcome = details.outcome;
  return {
    task: {
      ...summaryOf(task),
      attempt: runsStarted(task, events),
      // Arguments this process cannot decode are shown as such, not as the empty object the record carries — and not
      // with the reason, which is the operator's (a key id and its remedy, in the server's log when the task runs).
      arguments: task.unreadableArguments === undefined ? boundedJson(task.arguments) : boundedText('(cannot be read by this server)'),
      ttlMs: task.ttlMs,
      expiresAt: task.expiresAt,
      protocolVersion: task.protocolVersion,
    },
    events: events.map((event) => ({ seq: event.seq, kind: event.kind, status: event.status, at: event.at, detail: eventDetail(event) })),
    result: outcome?.kind === 'result' ? boundedJson(outcome.result) : null,
    resultText: outcome?.kind === 'result' ? resultTextOf(outcome.result) : null,
    resultStructured: outcome?.kind === 'result' ? structuredOf(outcome.result) : null,
    fullResult: outcome?.kind === 'result' ? fullResultOf(task.taskId, outcome.result) : null,
    error: outcome?.kind === 'error' ? boundedJson(outcome.error as unknown as JsonValue) : null,
    questions: (details.inputRequests ?? []).map(questionOf),
    permissions,
    operations: inspection.operations.map((operation) => operationOf(operation, mayReconcile(viewer, operation))),
    declaresOperations: inspection.declaresOperations,
  };
}

/**
 * Where the whole result is read when the page shows less of it (issue 26 item 15): a result longer than the page's
 * bound, or one stored in chunks (larger than `maxResultBytes`, issue 10 §2) whose stored form is a preview.
 */
function fullResultOf(taskId: string, result: JsonObject): TaskPageView['fullResult'] {
  const large = largeResultMetaOf(result);
  if (large) return { href: fullResultHref(taskId), bytes: large.bytes };
  const text = JSON.stringify(result, null, 2);
  return text.length > MAX_SHOWN_JSON_CHARS ? { href: fullResultHref(taskId), bytes: Buffer.byteLength(text) } : null;
}

const fullResultHref = (taskId: string): string => `/dashboard/api/tasks/${encodeURIComponent(taskId)}/result`;

/**
 * Runs started, as the timeline shows them: the highest `attempt` event, or the row's count when higher. The row's
 * `attempt` does not count a run that parked for input (it is given back), so a task waiting for an answer after
 * its first run would say "Runs 0" beside a timeline that shows run 1 (issue 26 item 16).
 */
function runsStarted(task: TaskRecord, events: readonly TaskEvent[]): number {
  const numbers = events.filter((event) => event.kind === 'attempt').map((event) => Number(event.payload?.attempt ?? 0));
  return Math.max(task.attempt, ...numbers.filter(Number.isFinite));
}

/** A ledger row for the page; `mayReconcile` only for an open row (`pending`, `unknown`). */
export function operationOf(operation: OperationRecord, mayReconcile: boolean): OperationView {
  const open = operation.status === 'pending' || operation.status === 'unknown';
  return {
    operationId: operation.operationId,
    key: operation.key,
    taskId: operation.taskId,
    owner: operation.ownerKey,
    tool: operation.toolName,
    effect: operation.effect,
    target: operation.target,
    objectVersion: operation.objectVersion,
    status: operation.status,
    receipt: operation.receipt ? boundedJson(operation.receipt) : null,
    detail: operation.detail,
    createdAt: operation.createdAt,
    updatedAt: operation.updatedAt,
    mayReconcile: open && mayReconcile,
  };
}

/** What a reconcile answered, for the viewer who asked. */
export function reconcileViewOf(report: ReconcileReport, viewer: Viewer): ReconcileView {
  return {
    verdict: report.verdict.status,
    detail: report.verdict.status === 'unknown' ? report.verdict.detail : null,
    changed: report.changed,
    operation: operationOf(report.operation, mayReconcile(viewer, report.operation)),
  };
}
