/**
 * Wire constants of both task generations: JSON-RPC error codes, reserved `_meta` keys, versions.
 * Names follow the spec (base 2026-07-28 §8, 2025-11-25 tasks, SEP-2663).
 */

/** JSON-RPC and MCP error codes used by the tasks layer (base 2026-07-28 §8). */
export const ErrorCode = Object.freeze({
  /** Invalid JSON. */
  ParseError: -32700,
  /** Not a JSON-RPC request; also oversized bodies (HTTP 413). */
  InvalidRequest: -32600,
  /** Unknown method, `tasks/result` under v2, v1 `taskSupport` violations (R8, R10). */
  MethodNotFound: -32601,
  /** Bad params, unknown/foreign/expired task, bad cursor, cancel of a terminal v1 task. */
  InvalidParams: -32602,
  /** Internal error; runtime-made failures carry `data.reason`. */
  InternalError: -32603,
  /**
   * The SDK's code for refusals by the HTTP transport itself, before any JSON-RPC handling: a POST whose
   * Content-Type is not `application/json` (HTTP 415), an `Accept` without `application/json` and
   * `text/event-stream` (406), a 2025-11-25 request without `Mcp-Session-Id` (400). It lies in the legacy
   * implementation-defined range (base §8, "new code SHOULD NOT use"); kept because the SDK answers it on both
   * generations and our answers must equal the SDK's (`test/contract/fast-path.test.ts`).
   */
  TransportRefused: -32000,
  /** A 2025-11-25 `Mcp-Session-Id` the store does not know, or another owner's (HTTP 404: initialise again). */
  SessionNotFound: -32001,
  /** HTTP header missing/invalid/≠ body (HTTP 400). */
  HeaderMismatch: -32020,
  /** Missing required client capability, `data.requiredCapabilities` (HTTP 400). */
  MissingRequiredClientCapability: -32021,
  /** Unsupported protocol version, `data.supported` / `data.requested` (HTTP 400). */
  UnsupportedProtocolVersion: -32022,
  /**
   * Application codes (issue 10 §2), outside the spec-reserved −32768…−32000 (base §8); each comes with a stable
   * `data.reason` ({@link ApplicationErrorReason}) and, where waiting helps, `data.retryAfterMs`.
   * A per-owner quota is full; nothing was created.
   */
  QuotaExceeded: -31001,
  /** The server sheds load (busy / backpressure); retry after `data.retryAfterMs`. Defined; nothing sheds load yet. */
  ServerBusy: -31002,
  /** The operator's kill switch or canary refuses a task-augmented call (`data.reason`: {@link KillSwitchReason}). */
  KillSwitch: -31003,
  /**
   * `resources/read` of a large result on a path that answers one whole message (stdio, HTTP requests the
   * streaming fast path does not take) and a result above what that path may hold (issue 23 §5): nothing was read;
   * `data: {reason: "read_in_chunks", uri, bytes, limit, chunks, chunkUri}` names the chunk resources to read instead.
   */
  ResultReadTooLarge: -31004,
} as const);

/** The stable `data.reason` of each application error code (issue 10 §2): the part clients branch on. */
export const ApplicationErrorReason = Object.freeze({
  /** `-31001`: the owner has `--max-active-tasks-per-owner` non-terminal tasks. */
  ActiveTasks: 'active_tasks',
  /** `-31001`: the owner created `--max-creates-per-minute` tasks in the last 60 s. */
  CreateRate: 'create_rate',
  /** `-31002`. */
  Busy: 'busy',
  /** `-31003` (and `canary`, `sync_timeout`: see {@link KillSwitchReason}). */
  KillSwitch: 'kill_switch',
  /** `-31004`: read the result's chunks (`data.chunkUri`, indexes 0 … `data.chunks` − 1), or stream it over HTTP. */
  ReadInChunks: 'read_in_chunks',
  /**
   * `-32602` of a `tools/call` whose idempotency key was already used for another request (another tool or other
   * arguments), or by a call whose result is not kept (answered inline, or its task expired or purged): nothing ran.
   */
  IdempotencyKeyUsed: 'idempotency_key_used',
  /**
   * `-32603` "Task store unavailable": the server could not reach its task store while it handled the request. For a
   * `tools/call` it cannot tell whether the call was recorded (a connection lost at COMMIT), so a requestor treats
   * the call's outcome as unknown, never as failed.
   */
  StoreUnavailable: 'store_unavailable',
  /** `-32603` "Task store failed…": the task store failed a read or write of the request; as `store_unavailable`. */
  StoreFailed: 'store_failed',
} as const);

/**
 * The `data.reason` of the `-32603` that fails a call forwarded to an upstream MCP server (`serve --upstream`, issue
 * 28; `data.upstream` names it): `upstream_error` — the upstream answered the `tools/call` with a JSON-RPC error
 * (`data.upstreamCode`); `upstream_down` — its connection closed while the call ran (the call may have done part of
 * its work, so it is not sent again); `upstream_unavailable` — it could not be reached, so the call was never sent.
 */
export const UpstreamFailureReason = Object.freeze({
  Error: 'upstream_error',
  Down: 'upstream_down',
  Unavailable: 'upstream_unavailable',
} as const);

/**
 * The stable `data.reason` of a {@link ErrorCode.KillSwitch} error: `kill_switch` (switched off, fallback `reject`,
 * or a tool that runs only as a task), `canary` (the caller is outside the tool's canary), `sync_timeout` (the
 * inline run of the `sync` fallback passed the server's `maxSyncMs`).
 */
export type KillSwitchReason = 'kill_switch' | 'canary' | 'sync_timeout';

/** The Tasks Extension identifier (SEP-2663). */
export const TASKS_EXTENSION_ID = 'io.modelcontextprotocol/tasks';
/** `_meta` key linking task messages to a task in 2025-11-25 (R31). */
export const RELATED_TASK_META_KEY = 'io.modelcontextprotocol/related-task';
/** `_meta` key carrying the request's protocol version (2026-07-28 B2). */
export const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';
/** `_meta` key carrying the request's client capabilities (2026-07-28 B2). */
export const CLIENT_CAPABILITIES_META_KEY = 'io.modelcontextprotocol/clientCapabilities';
/** `_meta` key carrying the client's self-reported identity (2026-07-28 B2). */
export const CLIENT_INFO_META_KEY = 'io.modelcontextprotocol/clientInfo';
/** `_meta` key tagging every message of a `subscriptions/listen` stream (2026-07-28 B19). */
export const SUBSCRIPTION_ID_META_KEY = 'io.modelcontextprotocol/subscriptionId';

/** `_meta` key of a 2025-11-25 `CreateTaskResult`: text the host may give the model while the task runs (R15). */
export const IMMEDIATE_RESPONSE_META_KEY = 'io.modelcontextprotocol/model-immediate-response';

/**
 * `_meta` key Claude Code reads a task's immediate response from, on a `CreateTaskResult` of either generation:
 * `{ modelImmediateResponse: string }` (at most {@link AGENT_TASK_IMMEDIATE_RESPONSE_MAX_CHARS} characters). It
 * ignores `statusMessage` and R15's key, so without this the model sees only a generic placeholder (issue 27 §1).
 */
export const AGENT_TASK_META_KEY = 'com.anthropic/agent-task';
/** Longest immediate response Claude Code passes to the model (characters). */
export const AGENT_TASK_IMMEDIATE_RESPONSE_MAX_CHARS = 20_000;

/**
 * The `_meta` of a `CreateTaskResult` that carries the tool's immediate response for the model, under both keys
 * hosts read: R15's (2025-11-25, `io.modelcontextprotocol/model-immediate-response`) and Claude Code's
 * (`com.anthropic/agent-task`). The text is already one sanitised line (src/protocol/model-text.ts).
 */
export function immediateResponseMeta(text: string): Record<string, unknown> {
  return {
    [IMMEDIATE_RESPONSE_META_KEY]: text,
    [AGENT_TASK_META_KEY]: { modelImmediateResponse: text.slice(0, AGENT_TASK_IMMEDIATE_RESPONSE_MAX_CHARS) },
  };
}

/**
 * `_meta` key of a `tools/call` (either generation) carrying the requestor's idempotency key: 1–255 printable ASCII
 * characters. Namespaced with a reverse-DNS prefix of our own because the key is not part of MCP: a server that does
 * not know it ignores it. A server that honours it declares {@link IDEMPOTENCY_CAPABILITY_ID}.
 */
export const IDEMPOTENCY_KEY_META_KEY = 'dev.mcp-tasks/idempotency-key';
/**
 * The capability a server declares when it honours {@link IDEMPOTENCY_KEY_META_KEY} (same owner + key + tool and
 * arguments → the existing task, no second run): `{}` under 2026-07-28 `capabilities.extensions` and under
 * 2025-11-25 `capabilities.experimental`.
 */
export const IDEMPOTENCY_CAPABILITY_ID = 'dev.mcp-tasks/idempotency';
/**
 * `_meta` key of a `tasks/get` result (either generation, any status) listing the task's domain operations (issue 12):
 * what the system of record did, next to what the protocol knows. Each entry: {@link OperationMetaEntry}.
 */
export const OPERATIONS_META_KEY = 'dev.mcp-tasks/operations';

/** One entry of {@link OPERATIONS_META_KEY}: no target, no detail (operators see those with `mcp-tasks ops`). */
export interface OperationMetaEntry {
  operationId: string;
  effect: string;
  status: 'pending' | 'confirmed' | 'failed' | 'unknown';
  /** The downstream id / evidence handle once confirmed, else `null`. */
  receipt: Record<string, unknown> | null;
}

/**
 * `_meta` key of a `tasks/get` result and of a task status notification (either generation, once the task has
 * started): the number of the run the status belongs to, 1 for the first. Recovery re-runs a task whose process
 * died; a larger number than a requestor saw before tells it so, whatever the progress text says.
 */
export const ATTEMPT_META_KEY = 'dev.mcp-tasks/attempt';

/** `_meta` of a task answer carrying its attempt (see {@link ATTEMPT_META_KEY}); empty while no run has started. */
export function attemptMeta(attempt: number): Record<string, number> {
  return attempt > 0 ? { [ATTEMPT_META_KEY]: attempt } : {};
}

/**
 * JSON Schema annotation on a property of a tool's `inputSchema`: `"x-mcp-tasks-local-path": true` says the value
 * is a filesystem path on the requestor's machine, so `mcp-tasks call` makes a relative one absolute against its
 * current directory. Arguments without it are sent as typed — never rewritten because of their name.
 */
export const LOCAL_PATH_SCHEMA_KEY = 'x-mcp-tasks-local-path';

/**
 * `_meta` key of an `isError` `tools/call` result meaning the tool never ran: its arguments were refused before
 * (schema validation, the tool's preflight). The CLI reports it as bad input (exit 64), not as a tool error.
 */
export const INPUT_REFUSED_META_KEY = 'dev.mcp-tasks/input-refused';

/** `_meta` key of a `tools/call` carrying the requestor's correlation id, kept in its journal to find the call again in logs. */
export const CORRELATION_ID_META_KEY = 'dev.mcp-tasks/correlation-id';

/** Whether `key` is a valid idempotency key: 1–255 printable ASCII characters (0x20–0x7E). */
export function isValidIdempotencyKey(key: string): boolean {
  return /^[\x20-\x7e]{1,255}$/.test(key);
}

/** The legacy revision that carries experimental tasks. */
export const V1_PROTOCOL_VERSION = '2025-11-25';
/** The stateless revision that carries the Tasks Extension. */
export const V2_PROTOCOL_VERSION = '2026-07-28';

/** `requiredCapabilities` payload of a `-32021` for the Tasks Extension (SEP-2663 E6, E41). */
export const TASKS_EXTENSION_REQUIRED_CAPABILITIES = Object.freeze({
  extensions: Object.freeze({ [TASKS_EXTENSION_ID]: Object.freeze({}) }),
});
