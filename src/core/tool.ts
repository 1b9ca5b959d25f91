import type { z } from 'zod';

import { LOCAL_PATH_SCHEMA_KEY } from '../protocol/constants.js';
import type { PathConfinement } from './confinement.js';
import type { Logger } from './logger.js';
import type { JsonObject, JsonValue } from './task.js';

/**
 * How a tool may be called:
 * - `sync`: never a task (2025-11-25 `taskSupport: "forbidden"`; v2 always answers inline);
 * - `task-optional`: a task when the requestor can take one (v1 `task` param; v2 declared extension), else inline;
 * - `task-required`: only as a task (v1 `-32601` without `task`; v2 `-32021` without the extension).
 */
export type ToolExecution = 'sync' | 'task-optional' | 'task-required';

/** A content block of a `CallToolResult` (text, image, resource, …) as plain JSON. */
export type ContentBlock = { type: 'text'; text: string } | ({ type: string } & JsonObject);

/** What a tool returns: the body of a `CallToolResult`. */
export interface ToolResult {
  content: ContentBlock[];
  /** Must satisfy the tool's `outputSchema` when it has one. */
  structuredContent?: JsonObject;
  /** A tool-level failure (v1 task → `failed`; v2 task → `completed`, SEP-2663 E13). */
  isError?: boolean;
}

/**
 * A question for the user (MCP `elicitation/create`): a form described by a flat JSON Schema, or a URL to open.
 * Form mode needs the client's `elicitation` (or `elicitation.form`) capability, URL mode `elicitation.url`.
 */
export type ElicitRequest =
  { mode?: 'form'; message: string; requestedSchema: JsonObject } | { mode: 'url'; message: string; url: string; elicitationId: string };

/** The user's answer (MCP `ElicitResult`): `accept` with `content` (form mode), `decline` or `cancel`. */
export interface ElicitResult {
  action: 'accept' | 'decline' | 'cancel';
  content?: JsonObject;
}

/**
 * Handed to a tool's `gather` phase (input collected before any task exists). `roots` and `deniedPaths` (see
 * {@link PathConfinement}) bound every path the tool touches.
 */
export interface GatherContext extends PathConfinement {
  readonly signal: AbortSignal;
  /** Ask the user; resolves with the answer (2026-07-28: MRTR rounds on `tools/call`; 2025-11-25: a direct request). */
  elicit(request: ElicitRequest): Promise<ElicitResult>;
}

/**
 * A tool's per-owner state: small JSON documents it keeps between calls of the same owner (the last snapshot a run
 * compares with), namespaced by the tool's name and kept by the server in its task store — never in files, so no
 * tool can read it as a file and no owner sees another's. Bounded: `MAX_TOOL_STATE_BYTES` (512 KiB) of JSON per
 * document and `MAX_TOOL_STATE_KEYS` (64) keys per owner and tool (see `core/ports/steps.ts`).
 */
export interface OwnerState {
  /** The document stored under `key` by an earlier call of this owner, or `undefined`. */
  get(key: string): Promise<JsonValue | undefined>;
  /**
   * Stores (replaces) the document under `key`, durably.
   * @throws StoreError `invalid` (nothing written) beyond the bounds.
   */
  put(key: string, value: JsonValue): Promise<void>;
}

/**
 * Handed to a running tool. Every argument and return value is JSON-serialisable. `roots` and `deniedPaths` (see
 * {@link PathConfinement}) bound every path the tool touches: resolve user paths with `resolveInsideRoots(path, ctx)`.
 */
export interface ToolContext extends PathConfinement {
  /** Aborted on cancellation, TTL expiry, runtime limit or shutdown. Check it at least every 10,000 lines. */
  readonly signal: AbortSignal;
  /** The task id, or `null` when the call runs inline (no task). */
  readonly taskId: string | null;
  /** Structured, redacting logger bound to this call. */
  readonly logger: Logger;
  /** Set statusMessage (capped at 512 characters, control characters stripped; written at most once a second). */
  setStatus(message: string): void;
  /** Report progress; becomes statusMessage `"<message> (done/total)"`. */
  progress(done: number, total?: number, message?: string): void;
  /**
   * Run a side-effecting step once. Its JSON result is journaled under `name`; when the task is re-run after a
   * crash, the journaled value is returned and `fn` is not called again. Names must be unique per task run.
   */
  step<T extends JsonValue>(name: string, fn: () => T | Promise<T>): Promise<T>;
  /**
   * Ask the user and wait for the answer. In a task, the task becomes `input_required` and this run ends (it holds
   * no slot and no lease while it waits); when every outstanding question is answered the tool is run again from
   * the start, `ctx.step` results and earlier answers are replayed, and this call returns the answer. Questions
   * are identified by call order, so ask them in a deterministic order. Requires `elicits: true` on the tool;
   * with `elicits: 'in-place'` the run is not ended but waits here for the answer (see {@link ToolDefinition.elicits}).
   * @throws TasksError `-32021` (the task fails) when the creating request did not declare elicitation support.
   */
  elicit(request: ElicitRequest): Promise<ElicitResult>;
  /** Ask several questions at once (all outstanding together); resolves with the answers in the same order. */
  elicitAll(requests: readonly ElicitRequest[]): Promise<ElicitResult[]>;
  /** What the tool's `gather` phase returned (MRTR input collected before the task), or `undefined`. */
  readonly gathered: JsonValue | undefined;
  /** This tool's state kept for the caller's owner between calls (see {@link OwnerState}). */
  readonly ownerState: OwnerState;
  /**
   * Perform a consequential effect at most once, through the operation ledger (issue 12): a `pending` row is written
   * durably before `perform` runs; `perform` gets the operation id (pass it downstream as the system of record's
   * idempotency key) and returns a receipt, stored as `confirmed`. `perform` throwing {@link OperationNotApplied}
   * records `failed` (nothing happened) and rethrows; anything else records `unknown`.
   * A re-run (after a crash) never performs an operation that is `pending` or `unknown` again without asking the
   * tool's `operations[effect].reconcile` first: `confirmed` returns that receipt, `not_applied` performs,
   * `unknown` fails the task with `data.reason: "outcome_unknown"` and leaves the operation open for an operator.
   * Only in a task (an inline call cannot be reconciled), and only for an effect the tool declares in `operations`
   * (its reconciler). Keys are unique per task.
   * @throws TasksError `-32603` with `data: {reason: "outcome_unknown", operationId}`.
   */
  operation(spec: OperationSpec, perform: (operationId: string) => Promise<JsonObject>): Promise<OperationReceipt>;
  /** Shadow mode (issue 15 item 8): see {@link ShadowControl}. */
  readonly shadow: ShadowControl;
}

/**
 * How a tool that migrates from an existing job API names the job its run corresponds to. In shadow mode (the
 * worker's `shadow.tools`) the runtime then polls the tool's {@link ShadowAdapter.status} while the task runs and
 * at its end, and records every difference between the task's state and the job's. Outside shadow mode, and in
 * an inline call, `observe` does nothing.
 */
export interface ShadowControl {
  /** The job of the existing job API this run mirrors (e.g. the id the tool's own submission returned). Last call wins. */
  observe(jobId: string): void;
}

/** A job's state as a shadow adapter reports it, in the task's terms (its state projection). */
export type ShadowJobState = 'working' | 'completed' | 'failed' | 'cancelled';

/**
 * The adapter of a tool to the job API it replaces (`shadow` of its definition). Shadow mode only *observes*:
 * it calls `status`, never `submit` (the job is the tool's own; the runtime never submits twice).
 */
export interface ShadowAdapter {
  /** Submit a job to the existing API (declared for completeness of the migration; shadow mode never calls it). */
  submit?(args: unknown, context: { signal: AbortSignal }): Promise<string>;
  /**
   * The job's current state. Must not change the job. A throw is logged and counted as an error, never a mismatch.
   * @param jobId what the tool passed to `ctx.shadow.observe`.
   */
  status(jobId: string, context: { signal: AbortSignal }): Promise<ShadowJobState>;
}

/** What a tool declares about one effect before performing it (see {@link ToolContext.operation}). */
export interface OperationSpec {
  /** Unique per task, stable across re-runs (e.g. `publish:reports/x.md`). */
  key: string;
  /** A key of the tool's `operations` (its reconciler), e.g. `git.commit`. */
  effect: string;
  /** What the effect touches (a repository, a file); shown to operators, so never a secret. */
  target: string;
  /** The version of the target the effect expects, when known (e.g. the branch head). */
  objectVersion?: string;
}

/** A confirmed operation as `ctx.operation` returns it. */
export interface OperationReceipt {
  operationId: string;
  receipt: JsonObject;
  /** `true` when this run found the operation already confirmed (by an earlier run or by reconciliation). */
  replayed: boolean;
}

/** The system of record's answer to "did operation X happen?" (see {@link OperationHandlers.reconcile}). */
export type ReconcileVerdict = { status: 'confirmed'; receipt: JsonObject } | { status: 'not_applied' } | { status: 'unknown'; detail: string };

/** What a reconciler is told about the operation it checks (a ledger row, no secrets). */
export interface ReconcileInput {
  operationId: string;
  key: string;
  effect: string;
  target: string;
  objectVersion: string | null;
  taskId: string;
}

/**
 * How a tool module checks an effect in its system of record: `operations: { [effect]: { reconcile } }`, a named
 * export of the module and the `operations` of its definition, so the worker, `mcp-tasks ops reconcile` and any
 * other process that loads the tools can run it. `reconcile` must not perform the effect.
 */
export interface OperationHandlers {
  reconcile(operation: ReconcileInput): Promise<ReconcileVerdict>;
}

/** Thrown by a `perform` of {@link ToolContext.operation} when the system of record proves nothing happened. */
export class OperationNotApplied extends Error {
  override readonly name = 'OperationNotApplied';
}

/** Environment for `preflight` checks (before any task exists): the same confinement as the run's. */
export type PreflightContext = PathConfinement;

/**
 * Thrown by a tool's `preflight` (or by `run` for a bad argument) to answer with a tool result carrying
 * `isError: true` instead of a protocol error (SEP-1303: input validation errors are tool errors).
 */
export class ToolInputError extends Error {
  override readonly name = 'ToolInputError';
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a registry holds tools of any argument type
export type AnyToolDefinition = ToolDefinition<any>;

/** A registered tool. Use {@link defineTool} to build one with typed arguments. */
export interface ToolDefinition<Args = unknown> {
  name: string;
  title?: string;
  description: string;
  /** A zod object schema; its JSON Schema is advertised in `tools/list` and every call is validated with it. */
  inputSchema: z.ZodType<Args, unknown>;
  /** When present, `structuredContent` is validated against it before the result is stored. */
  outputSchema?: z.ZodType<JsonObject>;
  /**
   * JSON Schemas advertised in `tools/list` as given, instead of the ones rendered from `inputSchema` and
   * `outputSchema`: for a tool whose schemas are JSON Schema already (an upstream server's tool, issue 28), which a
   * round trip through zod would lose fields of. Validation stays with the zod schemas (and the upstream).
   */
  advertisedSchemas?: { input: JsonObject; output?: JsonObject };
  execution: ToolExecution;
  /** Running it twice has the same effect as once: safe to re-run after a crash. */
  idempotent?: boolean;
  /**
   * Longest single run of this tool (ms), in a task or inline, instead of the server's `limits.runtimeLimitMs`
   * (1 … 2^31 − 1; a run past it fails `-32603` `data.reason: "runtime_limit"`). @defaultValue the server's limit
   */
  runtimeLimitMs?: number;
  /**
   * Retention of this tool's tasks (ms from creation) when the requestor asks for none — every 2026-07-28 task, a
   * 2025-11-25 task without `ttl` — instead of the server's `limits.defaultTtlMs`, clamped to `[minTtlMs, maxTtlMs]`.
   * @defaultValue the server's default
   */
  defaultTtlMs?: number;
  /** Every side effect goes through `ctx.step`: safe to re-run after a crash (steps are replayed). */
  journaled?: boolean;
  /**
   * The tool calls `ctx.elicit`, and how a task waits for the answers:
   * - `true`: the run ends at an unanswered question (the task holds no slot and no lease while it is
   *   `input_required`) and the tool is re-run from the start once everything is answered, so it must be
   *   `idempotent` or `journaled`; registering it otherwise is an error.
   * - `'in-place'`: the run waits where it stands — the task is `input_required` while the run keeps its slot and
   *   lease, and `ctx.elicit` returns when the answer arrives (from any API process). For a tool that cannot be
   *   re-run to reach its question again, such as a call forwarded to another MCP server (`serve --upstream`).
   *   The wait counts against `runtimeLimitMs` and the input timeout like any time of a run. Without a task, a
   *   2025-11-25 session is asked directly; a 2026-07-28 call cannot wait (its questions end the call), so
   *   `ctx.elicit` throws `-32021` naming the Tasks Extension: call the tool as a task.
   */
  elicits?: boolean | 'in-place';
  /**
   * Input to collect before the task exists (SEP-2663 E16: MRTR rounds finish synchronously before
   * `CreateTaskResult`). Its JSON return value reaches `run` as `ctx.gathered`.
   */
  gather?(args: Args, context: GatherContext): Promise<JsonValue>;
  /**
   * What the model may be told at once when the call becomes a task: what was started and roughly how long it
   * takes (e.g. "Scanning /var/log for templates; usually under a minute"). Sent as the 2025-11-25
   * `CreateTaskResult._meta["io.modelcontextprotocol/model-immediate-response"]` (R15) and as the task's initial
   * `statusMessage` (both generations, SEP-2663 E11), after secret redaction, control-character stripping and the
   * 512-character cap of every statusMessage. Called with the parsed arguments; a throw only omits the text.
   */
  immediateResponse?(args: Args): string;
  /**
   * `false`: on 2026-07-28 always answer a task, even when the run completes within the inline grace
   * (`limits.inlineGraceMs`, issue 27 §5) — for a tool whose caller must get a task id (e.g. to follow or cancel it).
   * @defaultValue true
   */
  inlineGrace?: boolean;
  /** Cheap checks run before a task is created (e.g. path confinement); throw {@link ToolInputError}. */
  preflight?(args: Args, context: PreflightContext): void | Promise<void>;
  run(args: Args, context: ToolContext): Promise<ToolResult>;
  /**
   * Arguments that name another task of the caller (e.g. `fromTask`): the task service resolves each one present,
   * with the caller's owner and generation check, before the task is created, and the run gets
   * `ctx.gathered = { [argument]: { taskId, toolName, result } }` (the completed task's `CallToolResult`). A tool with
   * `resolvesTasks` has no `gather` phase. Tools never read the store themselves.
   */
  resolvesTasks?: readonly string[];
  /** The reconcilers of the effects the tool performs through `ctx.operation`, by effect name. */
  operations?: Readonly<Record<string, OperationHandlers>>;
  /** The tool's adapter to the job API it replaces, for shadow mode (see {@link ShadowAdapter}). */
  shadow?: ShadowAdapter;
}

/** What `tools/list` shows of a tool: its definition without the parts that run. */
export type ToolDescriptor = Pick<AnyToolDefinition, 'name' | 'title' | 'description' | 'inputSchema' | 'outputSchema' | 'advertisedSchemas' | 'execution'>;

/** Identity helper that infers `Args` from `inputSchema`. */
export function defineTool<Schema extends z.ZodType<object>>(
  definition: Omit<ToolDefinition<z.output<Schema>>, 'inputSchema'> & { inputSchema: Schema },
): ToolDefinition<z.output<Schema>> {
  return definition as unknown as ToolDefinition<z.output<Schema>>;
}

/**
 * Mark a string argument as a path on the requestor's machine (`"x-mcp-tasks-local-path": true` in the advertised
 * JSON Schema): `mcp-tasks call` then makes a relative value absolute against its current directory. Leave it off
 * for paths the tool resolves itself (e.g. relative to a repository). Top-level properties only.
 * @example inputSchema: z.object({ path: localPath(z.string().min(1)) })
 */
export function localPath<Schema extends z.ZodType<string | undefined>>(schema: Schema): Schema {
  return schema.meta({ [LOCAL_PATH_SCHEMA_KEY]: true }) as Schema;
}

/** A text-only tool result. */
export function textResult(text: string, extra?: { structuredContent?: JsonObject; isError?: boolean }): ToolResult {
  return { content: [{ type: 'text', text }], ...extra };
}
