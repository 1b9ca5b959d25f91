import type { PathConfinement } from './confinement.js';
import type { OperationRecord, OperationSettlement } from './ledger.js';
import type { JsonObject, JsonRpcErrorObject, JsonValue } from './task.js';
import type { ElicitRequest, ElicitResult, OperationSpec } from './tool.js';

/**
 * The executor port: run one tool call and report how it ended. The worker hands it claimed tasks, the service
 * inline calls. Everything that crosses the port is JSON (a request, the context operations below, the outcome),
 * so an isolated implementation (a worker thread or a child process that loads the tools by module specifier)
 * can replace the in-process one without another interface: each context operation is one message.
 */
export interface Executor {
  /**
   * Run `request.toolName` with a `ToolContext` whose operations are answered by `host`. Never rejects for what
   * the tool did: every ending is an {@link ExecutionOutcome}. `signal` aborts the run with a reason (`cancelled`,
   * `expired`, `runtime_limit`, `lease_lost`, `shutdown`, …) that the tool sees as `ctx.signal.reason`; a run whose
   * signal was aborted ends `aborted` whatever the tool returned afterwards, so its outcome can never be recorded.
   * A run whose signal aborts before it started (still waiting for a thread, say) never starts: it ends `aborted`
   * at once, and `host.started` is never called. `withdraw` takes back a run only if it has not started: aborted
   * before the tool started, the run ends `aborted` (with `withdraw.reason`) and never starts; aborted later, it has
   * no effect and the tool runs on (a draining worker starts no new tool but lets running ones finish, issue 22).
   * @throws only for a broken call of the port (an unknown tool name is the caller's bug: it checks first).
   */
  execute(request: ExecutionRequest, host: ExecutionHost, signal: AbortSignal, withdraw?: AbortSignal): Promise<ExecutionOutcome>;
  /** Release what the executor holds (threads, processes); runs still in progress are aborted first by their owners. */
  close(): Promise<void>;
  /** Whether it can start runs now (`/readyz`, `mcp-tasks doctor`); absent = always ready (nothing to load). */
  readiness?(): ExecutorReadiness;
}

/**
 * How an executor stands. The isolated executor is ready while at least one thread is warm (has loaded the tools)
 * and none failed to load them; `threads` counts its pool's threads now and its bounds, `warmUpMs` is the median
 * time a thread took to load the tools, `error` the last loader error. `upstreams` (issue 28) reports the upstream
 * MCP servers whose tools this process forwards; reported, not a readiness condition: a dead upstream fails its
 * own calls, and the process goes on serving every other tool.
 */
export interface ExecutorReadiness {
  ready: boolean;
  mode: 'isolated' | 'in-process';
  threads?: { warm: number; loading: number; failed: number; min: number; max: number };
  warmUpMs?: number;
  error?: string;
  upstreams?: UpstreamStatus[];
}

/**
 * How one upstream MCP server's connection stands in this process (`serve --upstream`, issue 28): `connecting` (the
 * first connection), `ready`, `restarting` (it died or could not be reached; the next attempt is in `retryInMs`),
 * `closed` (this process shut it down). `error` is the last failure, one sanitised line; `restarts` counts
 * successful reconnections since start, `failedRestarts` the attempts that failed; `tools` the tools listed here.
 */
export interface UpstreamStatus {
  name: string;
  transport: 'stdio' | 'http';
  state: 'connecting' | 'ready' | 'restarting' | 'closed';
  tools: number;
  restarts: number;
  failedRestarts: number;
  /** Calls forwarded and not answered yet. */
  inFlight: number;
  retryInMs?: number;
  error?: string;
}

/** One run of a tool, JSON-serialisable. */
export interface ExecutionRequest {
  /** The task being run, or `null` for an inline call (no task: `ctx.step` just runs its function). */
  taskId: string | null;
  /** A tool the executor has loaded (see `ToolRegistry`, `ToolSource`). */
  toolName: string;
  /** The call's arguments as stored with the task or sent inline; the executor parses them with the tool's `inputSchema`. */
  arguments: JsonObject;
  /** What the tool's `gather` phase returned (`ctx.gathered`), if it has one. */
  gathered?: JsonValue;
  /** Where the tool may touch the file system (`ctx.roots`, `ctx.deniedPaths`). */
  confinement: PathConfinement;
  /**
   * Fields the executor's own log lines about the run carry (a redacted task id, the attempt; never secrets). The
   * tool's lines (`host.log`) do not repeat them: the host's logger binds them.
   */
  logFields: Record<string, string | number>;
  /**
   * The owner key of the caller (`issuer|subject|tenant`, or `anonymous`): never in the tool's `ctx`; read only by
   * the upstream gateway, which forwards it to the HTTP upstreams configured to get it (issue 28).
   */
  ownerKey?: string;
}

/** A log line of a running tool, as a message (the host writes it with its own, redacting logger). */
export interface ExecutionLogEntry {
  level: 'debug' | 'info' | 'warn' | 'error';
  fields: JsonObject;
  message: string;
}

/**
 * The context operations of a running tool, answered by whoever asked for the run: the worker for a task (status
 * coalescing, the step journal, parking), the service for an inline call (MRTR or a session's own elicitation).
 * Arguments and results are JSON.
 */
export interface ExecutionHost {
  /**
   * The run has started: the tool's code runs from now on (after any wait for a free thread and its warm-up, which
   * are not the tool's time). The worker arms the runtime limit here. Not called for a run aborted before it started.
   */
  started?(): void;
  /** `ctx.setStatus` (the host sanitises: control characters stripped, 512 characters, secrets redacted). */
  setStatus(message: string): void;
  /** `ctx.progress`, already formatted as its statusMessage (`"<message> (done/total)"`). */
  progress(done: number, total: number | undefined, message: string): void;
  /**
   * A journaled step's value, or `undefined` when it never completed (always `undefined` inline).
   * @throws Error when the run no longer holds its task (another run took it over, or it ended): the step must not run.
   */
  getStep(name: string): Promise<{ value: JsonValue } | undefined>;
  /**
   * Journal a completed step and answer the value the journal holds: `value`, or an earlier run's value that was
   * journaled first (first write wins; inline, `value` and nothing is written).
   * @throws Error when the run no longer holds its task: nothing is journaled.
   */
  putStep(name: string, value: JsonValue): Promise<JsonValue>;
  /** `ctx.ownerState.get`: the document this tool keeps for the run's owner under `key`, or `undefined`. */
  getOwnerState(key: string): Promise<JsonValue | undefined>;
  /**
   * `ctx.ownerState.put`: replace the document under `key` for the run's owner, durably.
   * @throws StoreError `invalid` (nothing written) beyond `MAX_TOOL_STATE_BYTES` / `MAX_TOOL_STATE_KEYS`.
   */
  putOwnerState(key: string, value: JsonValue): Promise<void>;
  /**
   * `ctx.elicitAll`: the answers, or `parked` when the run must end here because a question is outstanding (a
   * task parks for input and runs again once answered; an inline 2026-07-28 call answers `input_required`).
   * @throws TasksError `-32021` when the creating request did not declare the elicitation a question needs.
   */
  elicit(requests: readonly ElicitRequest[]): Promise<{ answers: ElicitResult[] } | { parked: true }>;
  /** Write a log line of the tool (`ctx.logger`). */
  log(entry: ExecutionLogEntry): void;
  /**
   * `ctx.operation`, first half: write the `pending` ledger row of this task's operation `spec.key`, or return the
   * row an earlier run wrote (`opened: false`). Inline calls have no ledger: the host throws.
   */
  openOperation(spec: OperationSpec): Promise<{ operation: OperationRecord; opened: boolean }>;
  /** `ctx.operation`, second half: a conditional status write of an operation of this task. */
  settleOperation(operationId: string, settlement: Omit<OperationSettlement, 'now'>): Promise<OperationRecord | undefined>;
  /** `ctx.shadow.observe`: the job this run mirrors (a task in shadow mode polls it); absent = ignored (inline). */
  observeShadowJob?(jobId: string): void;
}

/**
 * How a run ended:
 * - `returned`: the tool's `CallToolResult`, checked against the MCP shape and its `outputSchema`, as plain JSON;
 * - `input_error`: the tool threw `ToolInputError` (an `isError` result, SEP-1303);
 * - `protocol_error`: the tool threw a coded error (`TasksError`, the SDK's `ProtocolError`), as that JSON-RPC error;
 * - `crashed`: anything else (a bug, a broken contract); the details went to the log, redacted, never to the wire;
 * - `parked`: the run stopped at an outstanding question (see {@link ExecutionHost.elicit});
 * - `aborted`: `signal` aborted before the run ended (`reason` as given); whatever the tool did is discarded.
 */
export type ExecutionOutcome =
  | { kind: 'returned'; result: JsonObject }
  | { kind: 'input_error'; message: string }
  | { kind: 'protocol_error'; error: JsonRpcErrorObject }
  | { kind: 'crashed'; message: string }
  | { kind: 'parked' }
  | { kind: 'aborted'; reason: string };

/** The journaled step under which a tool's `gather` value is stored with its task (read back as `ctx.gathered`). */
export const GATHERED_STEP = '@gathered';
