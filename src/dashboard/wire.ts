/**
 * The JSON the dashboard's page reads (`/dashboard/api/…`), shared by the server (`views.ts`) and the page
 * (`web/dashboard`), so it imports nothing. Everything in it is untrusted text for the page (task arguments,
 * statusMessages and results come from requestors and tools): the page renders it as text only. Times are epoch ms.
 */

export type TaskStatusName = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** One row of the task list. */
export interface TaskSummary {
  taskId: string;
  seq: number;
  status: TaskStatusName;
  tool: string;
  generation: 'v1' | 'v2';
  owner: string;
  createdAt: number;
  lastUpdatedAt: number;
  statusMessage: string | null;
  /** From a statusMessage that ends in `(done/total)` (how `ctx.progress` writes it), else `null`. */
  progress: { done: number; total: number } | null;
  attempt: number;
}

/** JSON text of a value, cut at a bound. */
export interface BoundedJson {
  text: string;
  truncated: boolean;
  /** Length of the full JSON text (characters). */
  chars: number;
}

/** The restricted JSON Schema of an elicitation property, as far as the page's form generator reads it. */
export interface SchemaProperty {
  type?: string;
  title?: string;
  description?: string;
  enum?: unknown[];
  oneOf?: Array<{ const?: unknown; title?: string }>;
  enumNames?: string[];
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  default?: unknown;
  items?: { type?: string; enum?: unknown[]; anyOf?: Array<{ const?: unknown; title?: string }> };
}

/** One question of an `input_required` task, with what the page needs to build its form. */
export interface QuestionView {
  key: string;
  message: string;
  /** `form` (answered with `requestedSchema`) or `url` (the answer happens elsewhere; the page can only decline). */
  mode: 'form' | 'url';
  requestedSchema: { type?: string; properties?: Record<string, SchemaProperty>; required?: string[] } | null;
  url: string | null;
}

/** A task page. */
export interface TaskPageView {
  task: TaskSummary & { arguments: BoundedJson; ttlMs: number | null; expiresAt: number | null; protocolVersion: string };
  events: Array<{ seq: number; kind: string; status: TaskStatusName; at: number; detail: string | null }>;
  /** The whole stored result as JSON (cut at a bound). */
  result: BoundedJson | null;
  /**
   * The result as a reader takes it (issue 26 item 15): its text content blocks joined by blank lines, as text
   * (`text` is the text itself, not JSON), and its `structuredContent` as JSON; `null` when it has none.
   */
  resultText: BoundedJson | null;
  resultStructured: BoundedJson | null;
  /**
   * The whole result, when the page shows less of it: `href` answers it as JSON (`bytes` long). A result longer
   * than the page's bound, or one stored in chunks (larger than the server's `maxResultBytes`, whose stored form is
   * a preview with a note); `null` otherwise.
   */
  fullResult: { href: string; bytes: number } | null;
  error: BoundedJson | null;
  questions: QuestionView[];
  permissions: { cancel: boolean; answer: boolean };
  /**
   * The domain operations of the task and their outcomes (pending / confirmed / unknown / failed), oldest first:
   * what the system of record answered, shown beside the task's status (a completed task is not a confirmed effect).
   */
  operations: OperationView[];
  /** The task's tool declares domain operations: with none recorded yet, they may still come (after a confirmation). */
  declaresOperations: boolean;
}

export type OperationStatusName = 'pending' | 'confirmed' | 'failed' | 'unknown';

/** One ledger row (issue 12) as the page shows it. */
export interface OperationView {
  operationId: string;
  key: string;
  taskId: string;
  owner: string;
  tool: string;
  effect: string;
  target: string;
  objectVersion: string | null;
  status: OperationStatusName;
  receipt: BoundedJson | null;
  detail: string | null;
  createdAt: number;
  updatedAt: number;
  /** Whether this viewer may reconcile it (open rows only; see `viewerMayReconcile`). */
  mayReconcile: boolean;
}

/** `GET /dashboard/api/operations?status=…`. */
export interface OperationListView {
  operations: OperationView[];
}

/** `POST /dashboard/api/operations/:id/reconcile`: what the system of record answered, and the row now. */
export interface ReconcileView {
  verdict: 'confirmed' | 'not_applied' | 'unknown';
  /** Why it stays unknown (the reconciler's words, redacted). */
  detail: string | null;
  changed: boolean;
  operation: OperationView;
}

/** `GET /dashboard/api/overview`: the last hour's tasks this viewer sees (times epoch ms, durations ms). */
export interface OverviewView {
  from: number;
  to: number;
  total: number;
  sampled: boolean;
  byStatus: Record<TaskStatusName, number>;
  byTool: Array<{ tool: string; count: number }>;
  buckets: Array<{
    from: number;
    created: number;
    queueWaitMedianMs: number | null;
    queueWaitMaxMs: number | null;
    runTimeMedianMs: number | null;
    runTimeMaxMs: number | null;
  }>;
}

/**
 * `GET /dashboard/api/upstreams`: how this process's upstream MCP servers stand (`serve --upstream`, issue 28), as
 * `/readyz` shows them; empty without upstreams. The shape of `UpstreamStatus` (src/core/executor.ts), written out
 * because this file imports nothing (the page's bundle reads it); `satisfies` where it is sent keeps the two in step.
 */
export interface UpstreamsView {
  upstreams: Array<{
    name: string;
    transport: 'stdio' | 'http';
    state: 'connecting' | 'ready' | 'restarting' | 'closed';
    tools: number;
    restarts: number;
    failedRestarts: number;
    inFlight: number;
    retryInMs?: number;
    error?: string;
  }>;
}

/** `GET /dashboard/api/tasks?…`: one page of the task list, newest first. */
export interface TaskListView {
  tasks: TaskSummary[];
  /** `before` of the next (older) page, `null` on the last. */
  nextBefore: number | null;
}

/**
 * What the server writes into the page it serves (a JSON data block, `#initial-data`), so the first view renders
 * without waiting for a request (issue 26 item 15): the session, and the data of the view at `url` — the task list's
 * page or the task page — as the API would answer it now. The event stream only updates it.
 */
export interface InitialView {
  /** The page's path and query as the server saw it; the page uses `tasks` / `task` only for this same URL. */
  url: string;
  session: SessionView;
  tasks?: TaskListView;
  task?: TaskPageView;
}

/** `GET /dashboard/api/session`. */
export interface SessionView {
  owner: string;
  scopes: string[];
  csrf: string;
  signedIn: boolean;
  /** What this viewer may do with the kill switch (`see`: admin:read or admin:write; `change`: admin:write). */
  killSwitch: { see: boolean; change: boolean };
}

/** One stored kill switch as the panel shows it. */
export interface KillSwitchRowView {
  /** `*` (every tool) or a tool name. */
  scope: string;
  /** `null`: the server's default fallback. */
  fallback: 'sync' | 'reject' | null;
  reason: string | null;
  setBy: string;
  setAt: number;
}

/** `GET /dashboard/api/kill-switch` (and the `kill-switch` event of the live feed). */
export interface KillSwitchPanelView {
  state: 'off' | 'on' | 'partial' | 'unknown';
  switches: KillSwitchRowView[];
  readAt: number | null;
  error?: string;
  defaultFallback: 'sync' | 'reject';
  tools: string[];
  /** Whether this viewer may turn switches on and off (the server checks again on every POST). */
  mayChange: boolean;
}
