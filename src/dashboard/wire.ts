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
  result: BoundedJson | null;
  error: BoundedJson | null;
  questions: QuestionView[];
  permissions: { cancel: boolean; answer: boolean };
  /**
   * The domain operations of the task and their outcomes (pending / confirmed / unknown / failed). `null`: the
   * operation ledger (issue 12) has not landed, so there is nothing to show — never a made-up "confirmed".
   */
  operations: null;
}

/** `GET /dashboard/api/session`. */
export interface SessionView {
  owner: string;
  scopes: string[];
  csrf: string;
  signedIn: boolean;
}
