import { ErrorCode } from '../protocol/constants.js';
import { TasksError } from './errors.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * Tunable limits and timings of a tasks server. Every duration is in milliseconds.
 * The four times users confuse are distinct: the HTTP request timeout (client side), the task runtime limit
 * (`runtimeLimitMs`), the poll interval hint (`pollIntervalMs`) and the retention (`defaultTtlMs`/`maxTtlMs`).
 */
export interface TasksServerLimits {
  /** Tools running at once in this process's worker. @defaultValue 16 */
  concurrency: number;
  /**
   * Retention when the requestor asks for none (v1) and always for v2; `null` = unlimited. It must exceed
   * `runtimeLimitMs` by at least `minResultRetentionMs`, so that a task that runs to the runtime limit keeps its
   * result that long. @defaultValue 2 h (the 1 h runtime limit plus a 1 h margin)
   */
  defaultTtlMs: number | null;
  /**
   * Least time a task that runs to `runtimeLimitMs` keeps its result under the default TTL (`defaultTtlMs -
   * runtimeLimitMs`); a policy that gives less is refused at start. A `ttl` a v1 requestor asks for is not held to it
   * (it is honoured as asked, clamped to `[minTtlMs, maxTtlMs]`). @defaultValue 10 min
   */
  minResultRetentionMs: number;
  /** Largest retention granted; requested v1 `ttl`s are clamped to it; `null` = unlimited allowed. @defaultValue 24 h */
  maxTtlMs: number | null;
  /** Smallest retention granted (smaller requests are raised to it). @defaultValue 1 s */
  minTtlMs: number;
  /** Longest poll interval hint sent as `pollInterval` / `pollIntervalMs`; younger tasks get shorter ones (`service/poll-hint.ts`). @defaultValue 1 s */
  pollIntervalMs: number;
  /**
   * Longest single run of a tool before the task fails (`data.reason: "runtime_limit"`); ≤ `maxTtlMs`. An inline
   * call is bounded by it too (aborted, `-32603` `runtime_limit`). @defaultValue 1 h
   */
  runtimeLimitMs: number;
  /** Runs per task (first included) before it fails with `attempts_exhausted`. @defaultValue 3 */
  maxAttempts: number;
  /** Lease length for running and queued tasks; renewed every third of it. @defaultValue 15 s */
  leaseMs: number;
  /** Interval of the lapsed-lease scan. @defaultValue `leaseMs` */
  recoveryIntervalMs: number;
  /**
   * Interval at which a worker claims runnable tasks although no event announced one (the event feed wakes it at
   * once; this is the fallback). @defaultValue 1 s
   */
  claimIntervalMs: number;
  /** Interval of the TTL sweeper (reads hide expired tasks regardless). @defaultValue 1 s */
  sweepIntervalMs: number;
  /** Interval of the per-process `task_events` tail that sees other processes' writes. @defaultValue 250 ms */
  tailIntervalMs: number;
  /** Window for coalescing statusMessage-only writes. @defaultValue 1 s */
  statusFlushIntervalMs: number;
  /** v1 `tasks/list` page size, 1–100. @defaultValue 50 */
  listPageSize: number;
  /** Largest accepted HTTP request body in bytes; larger bodies get HTTP 413 with `-32600`. @defaultValue 4 MiB */
  maxRequestBodyBytes: number;
  /** v1-generation (2025-11-25) HTTP sessions idle longer than this are closed. @defaultValue 30 min */
  sessionIdleMs: number;
  /** Most legacy (v1-generation (2025-11-25)) HTTP sessions kept at once; the least recently used is closed first. @defaultValue 1000 */
  maxSessions: number;
  /** A task waiting for input longer than this (since its last input activity) fails with `input_timeout`. @defaultValue 1 h */
  inputTimeoutMs: number;
  /**
   * Longest silence of an inline `tools/call` carrying a `progressToken` before a keep-alive
   * `notifications/progress` (issue 27 §3: clients abort calls silent for their idle timeout). @defaultValue 20 s
   */
  progressKeepAliveMs: number;
  /**
   * 2026-07-28 inline grace (issue 27 §5, SEP-2663 E2/E4: the server decides per request): a task-optional call
   * whose task completes within this long after its durable creation is answered with its `CallToolResult` instead
   * of `resultType: "task"` (the task row still exists and stays readable). `0` turns it off; a tool opts out with
   * `inlineGrace: false`. @defaultValue 1 s
   */
  inlineGraceMs: number;
  /**
   * Bound on a tool result's `structuredContent` in bytes of its JSON (issue 27 §2): a result over it is delivered
   * unchanged but logged as a warning and counted (`mcp_tasks_structured_content_oversized_total`), because clients
   * such as Claude Code give the model that JSON instead of the text. @defaultValue 32 KiB
   */
  structuredContentMaxBytes: number;
  /**
   * Largest `tools/call` arguments, in bytes of their JSON text (UTF-8); larger → `-32602` naming this limit, nothing
   * created (issue 10 §2). @defaultValue 1 MiB
   */
  maxArgumentBytes: number;
  /** Deepest nesting of arrays/objects in `tools/call` arguments (the arguments object is level 1); deeper → `-32602`. @defaultValue 32 */
  maxArgumentDepth: number;
  /**
   * Most active tasks — non-terminal (`working`, `input_required`) and not expired — one owner may have at once; one
   * more → quota error `-31001` with `data.reason: "active_tasks"`, nothing created. Counted by the store in the
   * create's own transaction, so it is exact (a task that ended or expired frees its slot at once) and holds across
   * API instances (`TaskStore.admitCreate`). `null` = unlimited. @defaultValue null
   */
  maxActiveTasksPerOwner: number | null;
  /**
   * Most tasks one owner may create in any 60 s window; one more → `-31001` with `data.reason: "create_rate"` and
   * `data.retryAfterMs` (when the oldest create of the window leaves it). Counted in the store. `null` = unlimited.
   * @defaultValue null
   */
  maxCreatesPerMinute: number | null;
  /**
   * Largest tool result a task stores inline, in bytes of its JSON text (UTF-8). A larger one completes the task with
   * bounded content — its first part, a note and a `resource_link` to `mcp-tasks://tasks/{taskId}/result` — and the
   * whole result is kept in chunks, read back with `resources/read` (issue 10 §2). @defaultValue 4 MiB
   */
  maxResultBytes: number;
  /**
   * Largest tool result kept at all (bytes of JSON); a larger one fails the task with `-32603`,
   * `data.reason: "result_too_large"`, so the store stays bounded. At least `maxResultBytes`. @defaultValue 64 MiB
   */
  maxStoredResultBytes: number;
  /**
   * How long an idempotency key of `tools/call` holds (same key → the same task), independent of the task's TTL:
   * a key outlives a purged task (a replay is then refused as already used). @defaultValue 24 h
   */
  idempotencyWindowMs: number;
  /** How long audit entries are kept (their own retention, independent of task TTLs). @defaultValue 90 days */
  auditRetentionMs: number;
  /**
   * How long a run whose signal was aborted (cancel, runtime limit, TTL, drain) may take to stop before the isolated
   * executor terminates its thread; a drain waits this long for aborted runs before releasing their leases anyway.
   * @defaultValue 5 s
   */
  abortGraceMs: number;
}

/**
 * How long a draining process (SIGTERM of `serve` or `worker`) lets runs finish before it aborts them with reason
 * `shutdown` and releases their leases (ms). `--drain-ms` overrides it.
 */
export const DEFAULT_DRAIN_MS = 30 * SECOND;
/** How long an API process without a worker stays ready while no worker process is live (`--worker-absent-ms`). */
export const DEFAULT_WORKER_ABSENT_MS = 30 * SECOND;

/**
 * Threads of the isolated executor's warm pool (`--min-threads`): loaded with the tools when the process starts and
 * kept loaded. Each costs about 24 MB of RSS and 0.7 s of CPU (most of a second on two busy cores) to load the
 * built-in tools (bench/results/2026-12-05-isolation.md), at every start of every `serve` and `worker`, so the default
 * is one; more threads load on demand, off the runs' clock, and the idle ones retire after a minute.
 */
export const DEFAULT_MIN_THREADS = 1;

/** Heap limit of each tool thread of the isolated executor (MB, `--thread-heap-mb`). */
export const DEFAULT_THREAD_HEAP_MB = 1024;

/** Defaults of {@link TasksServerLimits}. */
export const DEFAULT_LIMITS: Readonly<TasksServerLimits> = Object.freeze({
  concurrency: 16,
  defaultTtlMs: 2 * HOUR,
  minResultRetentionMs: 10 * MINUTE,
  maxTtlMs: 24 * HOUR,
  minTtlMs: SECOND,
  pollIntervalMs: SECOND,
  runtimeLimitMs: HOUR,
  maxAttempts: 3,
  leaseMs: 15 * SECOND,
  recoveryIntervalMs: 15 * SECOND,
  claimIntervalMs: SECOND,
  sweepIntervalMs: SECOND,
  tailIntervalMs: 250,
  statusFlushIntervalMs: SECOND,
  listPageSize: 50,
  maxRequestBodyBytes: 4 * 1024 * 1024,
  sessionIdleMs: 30 * MINUTE,
  inputTimeoutMs: HOUR,
  progressKeepAliveMs: 20 * SECOND,
  inlineGraceMs: SECOND,
  structuredContentMaxBytes: 32 * 1024,
  maxSessions: 1000,
  maxArgumentBytes: 1024 * 1024,
  maxArgumentDepth: 32,
  maxActiveTasksPerOwner: null,
  maxCreatesPerMinute: null,
  maxResultBytes: 4 * 1024 * 1024,
  maxStoredResultBytes: 64 * 1024 * 1024,
  idempotencyWindowMs: 24 * HOUR,
  auditRetentionMs: 90 * 24 * HOUR,
  abortGraceMs: 5 * SECOND,
} satisfies TasksServerLimits);

/** The longest delay Node's timers keep (2^31 − 1 ms, 24.8 days). */
export const MAX_TIMER_MS = 2_147_483_647;

/** Limits a timer waits for (not retentions or TTLs, which are compared with the clock): each at most {@link MAX_TIMER_MS}. */
const TIMER_LIMITS = [
  'leaseMs',
  'runtimeLimitMs',
  'pollIntervalMs',
  'recoveryIntervalMs',
  'claimIntervalMs',
  'sweepIntervalMs',
  'tailIntervalMs',
  'statusFlushIntervalMs',
  'inputTimeoutMs',
  'progressKeepAliveMs',
  'abortGraceMs',
  'inlineGraceMs',
] as const satisfies ReadonlyArray<keyof TasksServerLimits>;

/**
 * Merge partial limits over the defaults and validate them, reporting every problem at once.
 * @throws TasksError `-32602` listing each invalid setting.
 */
export function resolveLimits(input: Partial<TasksServerLimits> = {}): Readonly<TasksServerLimits> {
  const merged: TasksServerLimits = { ...DEFAULT_LIMITS, ...stripUndefined(input) };
  if (input.leaseMs !== undefined && input.recoveryIntervalMs === undefined) merged.recoveryIntervalMs = merged.leaseMs;
  const problems: string[] = [];
  const positive = (name: keyof TasksServerLimits): void => {
    const value = merged[name];
    if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) problems.push(`${name} must be a positive integer (got ${String(value)})`);
  };
  for (const name of [
    'concurrency',
    'minTtlMs',
    'pollIntervalMs',
    'runtimeLimitMs',
    'maxAttempts',
    'leaseMs',
    'recoveryIntervalMs',
    'claimIntervalMs',
    'sweepIntervalMs',
    'tailIntervalMs',
    'statusFlushIntervalMs',
    'maxRequestBodyBytes',
    'sessionIdleMs',
    'inputTimeoutMs',
    'progressKeepAliveMs',
    'structuredContentMaxBytes',
    'maxSessions',
    'maxArgumentBytes',
    'maxArgumentDepth',
    'maxResultBytes',
    'maxStoredResultBytes',
    'idempotencyWindowMs',
    'auditRetentionMs',
    'abortGraceMs',
  ] as const) {
    positive(name);
  }
  // Node's timers take at most 2^31 − 1 ms and fire after 1 ms past it: a larger runtime limit would end every run at
  // once (the configuration file refuses these too, see `timerMs` in cli/config/schema.ts).
  for (const name of TIMER_LIMITS) {
    const value = merged[name];
    if (typeof value === 'number' && value > MAX_TIMER_MS)
      problems.push(`${name} must be at most ${MAX_TIMER_MS} ms, the longest timer Node keeps (got ${value})`);
  }
  if (!Number.isInteger(merged.inlineGraceMs) || merged.inlineGraceMs < 0)
    problems.push(`inlineGraceMs must be an integer >= 0 (got ${String(merged.inlineGraceMs)})`);
  for (const name of ['defaultTtlMs', 'maxTtlMs', 'maxActiveTasksPerOwner', 'maxCreatesPerMinute'] as const) {
    const value = merged[name];
    if (value !== null && (!Number.isInteger(value) || value <= 0)) problems.push(`${name} must be a positive integer or null (got ${String(value)})`);
  }
  if (!Number.isInteger(merged.listPageSize) || merged.listPageSize < 1 || merged.listPageSize > 100)
    problems.push(`listPageSize must be between 1 and 100 (got ${merged.listPageSize})`);
  if (!Number.isInteger(merged.minResultRetentionMs) || merged.minResultRetentionMs < 0)
    problems.push(`minResultRetentionMs must be a non-negative integer (got ${String(merged.minResultRetentionMs)})`);
  else if (merged.defaultTtlMs !== null && merged.defaultTtlMs - merged.runtimeLimitMs < merged.minResultRetentionMs) {
    problems.push(
      `defaultTtlMs (${merged.defaultTtlMs}) must exceed runtimeLimitMs (${merged.runtimeLimitMs}) by at least minResultRetentionMs (${merged.minResultRetentionMs}): ` +
        `a task that runs to the runtime limit would keep its result only ${Math.max(0, merged.defaultTtlMs - merged.runtimeLimitMs)} ms`,
    );
  }
  if (merged.maxStoredResultBytes < merged.maxResultBytes)
    problems.push(`maxStoredResultBytes (${merged.maxStoredResultBytes}) must not be below maxResultBytes (${merged.maxResultBytes})`);
  if (merged.maxTtlMs !== null) {
    if (merged.runtimeLimitMs > merged.maxTtlMs)
      problems.push(`runtimeLimitMs (${merged.runtimeLimitMs}) must not exceed maxTtlMs (${merged.maxTtlMs}): a task would expire while still allowed to run`);
    if (merged.defaultTtlMs === null || merged.defaultTtlMs > merged.maxTtlMs)
      problems.push(`defaultTtlMs (${String(merged.defaultTtlMs)}) must not exceed maxTtlMs (${merged.maxTtlMs})`);
    if (merged.minTtlMs > merged.maxTtlMs) problems.push(`minTtlMs (${merged.minTtlMs}) must not exceed maxTtlMs (${merged.maxTtlMs})`);
  }
  if (problems.length > 0) throw new TasksError(ErrorCode.InvalidParams, `invalid server settings:\n- ${problems.join('\n- ')}`);
  return Object.freeze(merged);
}

function stripUndefined<T extends object>(input: T): Partial<T> {
  return Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined)) as Partial<T>;
}
