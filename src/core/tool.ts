import type { z } from 'zod';
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
  | { mode?: 'form'; message: string; requestedSchema: JsonObject }
  | { mode: 'url'; message: string; url: string; elicitationId: string };

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
 * document and `MAX_TOOL_STATE_KEYS` (64) keys per owner and tool (see `core/store.ts`).
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
   * are identified by call order, so ask them in a deterministic order. Requires `elicits: true` on the tool.
   * @throws TasksError `-32021` (the task fails) when the creating request did not declare elicitation support.
   */
  elicit(request: ElicitRequest): Promise<ElicitResult>;
  /** Ask several questions at once (all outstanding together); resolves with the answers in the same order. */
  elicitAll(requests: readonly ElicitRequest[]): Promise<ElicitResult[]>;
  /** What the tool's `gather` phase returned (MRTR input collected before the task), or `undefined`. */
  readonly gathered: JsonValue | undefined;
  /** This tool's state kept for the caller's owner between calls (see {@link OwnerState}). */
  readonly ownerState: OwnerState;
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
  execution: ToolExecution;
  /** Running it twice has the same effect as once: safe to re-run after a crash. */
  idempotent?: boolean;
  /** Every side effect goes through `ctx.step`: safe to re-run after a crash (steps are replayed). */
  journaled?: boolean;
  /**
   * The tool calls `ctx.elicit`. Such a tool is re-run after every answer, so it must be `idempotent` or
   * `journaled`; registering it otherwise is an error.
   */
  elicits?: boolean;
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
  /** Cheap checks run before a task is created (e.g. path confinement); throw {@link ToolInputError}. */
  preflight?(args: Args, context: PreflightContext): void | Promise<void>;
  run(args: Args, context: ToolContext): Promise<ToolResult>;
}

/** What `tools/list` shows of a tool: its definition without the parts that run. */
export type ToolDescriptor = Pick<AnyToolDefinition, 'name' | 'title' | 'description' | 'inputSchema' | 'outputSchema' | 'execution'>;

/** Identity helper that infers `Args` from `inputSchema`. */
export function defineTool<Schema extends z.ZodType<object>>(
  definition: Omit<ToolDefinition<z.output<Schema>>, 'inputSchema'> & { inputSchema: Schema },
): ToolDefinition<z.output<Schema>> {
  return definition as unknown as ToolDefinition<z.output<Schema>>;
}

/** A text-only tool result. */
export function textResult(text: string, extra?: { structuredContent?: JsonObject; isError?: boolean }): ToolResult {
  return { content: [{ type: 'text', text }], ...extra };
}
