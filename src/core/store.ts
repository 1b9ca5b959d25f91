import type { KillSwitchStore } from './kill-switch.js';
import type { LedgerStore } from './ledger.js';
import type { NewProcessEntry, ProcessRecord, RegisterProcessResult } from './process-record.js';
import type {
  InputRequestRecord,
  JsonObject,
  JsonValue,
  NewTask,
  TaskGeneration,
  TaskOutcome,
  TaskRecord,
  TaskStatus,
} from './task.js';
import type { ServerSecretStore, SessionStore } from './session-store.js';

/**
 * Kinds of rows in the append-only `task_events` log. Every change a requestor can observe (creation, status,
 * statusMessage, a new run, input, expiry) appends one row in the same transaction, so the log is the single source
 * for wake-ups, notifications, the audit trail and replay. Lease renewals and journaled steps write no event.
 * - `created`: task row inserted (status `working`).
 * - `status`: status transition (payload: `{from, to}`).
 * - `message`: statusMessage-only change (coalesced).
 * - `attempt`: a run started (payload: `{attempt, leaseOwner}`).
 * - `input`: input requests added, answered or retired (payload `{added}` or `{answered, retired, added}`).
 * - `expired`: TTL reached; the row is about to be deleted (this event outlives it for
 *   `EXPIRED_EVENT_RETENTION_MS`, so every tail sees it).
 * - `released`: a draining worker gave up its lease of a running task (payload `{leaseOwner}`); the lease has lapsed
 *   and any worker may recover the task now instead of after a lease. With `unstarted: true` in the payload the run
 *   never started its tool and was not counted: the task is runnable again (see `TaskStore.releaseUnstarted`).
 * Retention: a task's events are deleted with the task (`expireDue`).
 */
export type TaskEventKind = 'created' | 'status' | 'message' | 'attempt' | 'input' | 'expired' | 'released';

/** One row of `task_events`. */
export interface TaskEvent {
  /**
   * Position in the feed: assigned gap-free and in commit order within one database, across every process writing
   * to it. Every backend must guarantee that an event becomes visible to readers only after every event with a
   * smaller `seq` is visible, so a reader that tails `seq > cursor` never skips one (see
   * {@link TaskStore.readEventsAfter}). Retention later deletes the events of expired tasks; a seq is never reused.
   */
  seq: number;
  taskId: string;
  kind: TaskEventKind;
  /** Status after the event (for `expired`: status at expiry). */
  status: TaskStatus;
  /** Epoch ms. */
  at: number;
  payload: JsonObject | null;
}

/**
 * Limits which tasks a read may see: a read outside its scope answers like an unknown id. Expiry is not part of
 * it: a store returns a row until the sweep deletes it, and the layer above hides expired tasks (`visibleAt` in
 * `core/store-rules.ts`), so no backend has to copy that rule. Port change (issue 11): `now` left the scope.
 */
export interface TaskScope {
  /** Only tasks of this owner (`issuer|subject|tenant` or `anonymous`). */
  ownerKey: string;
  /** Only tasks of this protocol generation. */
  generation?: TaskGeneration;
}

/**
 * What the dashboard's task list asks for (issue 16): every filter optional, newest first, keyset-paged on `seq` so a
 * page never shifts while tasks are created. Owner scoping is the caller's decision (the task service): `ownerKey`
 * absent means every owner and is only used for an `admin:read` viewer.
 */
export interface TaskBrowseQuery {
  /** Only this owner's tasks; absent = every owner. */
  ownerKey?: string;
  /** Only tasks in one of these statuses (absent or empty = any). */
  statuses?: readonly TaskStatus[];
  /** Only tasks of this tool. */
  toolName?: string;
  /** Only tasks created at or after this instant (epoch ms). */
  createdFrom?: number;
  /** Only tasks created before this instant (epoch ms). */
  createdTo?: number;
  /** Case-insensitive substring of the task id, tool name or statusMessage. */
  text?: string;
  /** Only tasks with `seq < beforeSeq` (the cursor of the next page); absent = from the newest. */
  beforeSeq?: number;
  /** Rows to return at most. */
  limit: number;
}

/** A conditional status write. */
export interface TransitionRequest {
  /** New status. */
  to: TaskStatus;
  /**
   * Statuses the task must currently have; defaults to every status from which `to` is allowed by the state
   * machine. The write applies only when the current status is one of them (a conditional write).
   */
  from?: readonly TaskStatus[];
  /** New statusMessage; `undefined` keeps the current one, `null` clears it. */
  statusMessage?: string | null;
  /**
   * Stored in the same transaction: `completed` needs a `result`; `failed` needs an `error`, or (v1 only) a `result`
   * with `isError: true`; other statuses take none. A mismatch is refused with {@link StoreError} `invalid` before
   * anything is written (`checkOutcome` in `core/store-rules.ts`).
   */
  outcome?: TaskOutcome;
  /** When set, the write applies only while this instance holds the lease (a lost lease discards the outcome). */
  leaseOwner?: string;
  /** Clear the lease in the same write (any terminal transition and `input_required` do this). */
  releaseLease?: boolean;
  /** Epoch ms; becomes `lastUpdatedAt`. */
  now: number;
}

/** Bytes of JSON one tool-state document may take (see {@link TaskStore.putToolState}). */
export const MAX_TOOL_STATE_BYTES = 512 * 1024;
/** Keys one owner may hold per tool. */
export const MAX_TOOL_STATE_KEYS = 64;
/** Characters of a tool name or a key. */
export const MAX_TOOL_STATE_NAME = 200;

/**
 * Bytes of one stored chunk of a large result (see {@link TaskStore.putResultChunks}): small enough that serving a
 * result holds one chunk at a time, large enough that a 64 MiB result is 256 rows.
 */
export const RESULT_CHUNK_BYTES = 256 * 1024;

/** Listener for committed events, called after the commit, in commit order. */
export type TaskEventListener = (event: TaskEvent) => void;

/**
 * The per-owner quotas a create is admitted under (issue 10 §2), checked in the create's own transaction (see
 * {@link TaskStore.admitCreate}); the owner is the task's `ownerKey` and the instant its `createdAt`.
 */
export interface CreateQuota {
  /**
   * Most active tasks of the owner, the new one not counted: non-terminal (`working`, `input_required`) and not
   * expired (`expiresAt` unset or after the store's now). `null` = unlimited.
   */
  maxActive: number | null;
  /** Most creates of the owner in the `windowMs` before `createdAt`; `null` = unlimited. */
  maxCreates: number | null;
  /** Length of the create-rate window (ms). */
  windowMs: number;
}

/** Which quota refused a create (nothing was written). */
export type QuotaRefusal = { reason: 'active_tasks' } | { reason: 'create_rate'; /** When the oldest create of the window leaves it (ms from `createdAt`, ≥ 1). */ retryAfterMs: number };

/** The answer of {@link TaskStore.admitCreate}: the task created, or which quota is full. */
export type CreateAdmission = { admitted: true; task: TaskRecord } | ({ admitted: false } & QuotaRefusal);

/**
 * The storage port. One implementation per backend (`SqliteTaskStore`, `PostgresTaskStore`); every backend
 * passes the same contract suite (`describeTaskStoreContract` in `mcp-tasks/testing`).
 *
 * Durability: every returned promise resolves only after its write is committed durably. Implementations may
 * share one commit between concurrent writes (group commit) but never resolve before that commit.
 *
 * Time: instants the caller passes (`now`, `createdAt`) are stored as given. Leases and expiry sweeps are judged
 * on the store's own clock instead (SQLite: the clock it was opened with; PostgreSQL: the database's
 * `clock_timestamp()`), so the caller passes lease *durations*: one clock decides whether a lease has lapsed, for
 * every process sharing the database.
 *
 * Errors: methods throw only a {@link StoreError} (codes `conflict`, `invalid`, `unavailable`, `schema_mismatch`,
 * `fault`; the server maps them to JSON-RPC errors in one place); a condition that does not hold is reported by the
 * return value (`undefined` / `false` / `[]`), never by an exception.
 */
/** Told that events were committed elsewhere; `lastSeq` is the feed's last seq after that commit, if known. */
export type CommitWatcher = (lastSeq: number | undefined) => void;

export interface TaskStore extends LedgerStore, KillSwitchStore {
  /**
   * Create `task` when its owner's quotas admit one more (issue 10 §2, issue 23 §4), in ONE transaction under one
   * lock of the owner (SQLite: the write lock; PostgreSQL: an advisory transaction lock on the owner key, taken in
   * the write batch): the owner's active tasks (see {@link CreateQuota.maxActive}) and its creates in the window are
   * counted, and — when both are below their limits — the create is recorded for the window and the task inserted
   * as {@link create} does. So the count is exact: a task that ended, was cancelled or expired frees its slot at
   * once, and concurrent creates (of every process on the store) cannot exceed the limit. Creates older than the
   * window are deleted on the way. A refused create writes nothing.
   * @throws {StoreError} as {@link create}.
   */
  admitCreate(task: NewTask, quota: CreateQuota): Promise<CreateAdmission>;

  /**
   * Replace the stored chunks of `taskId`'s large result (issue 10 §2: the JSON text of a tool result above
   * `maxResultBytes`, at most {@link RESULT_CHUNK_BYTES} each) with `chunks`, numbered 0… in order, in one
   * transaction. The chunks belong to the task row: deleted with it (expiry, retention) by `ON DELETE CASCADE`.
   * @returns `false`, writing nothing, when the task does not exist.
   * @throws {StoreError} `invalid` for an empty or oversized chunk; `unavailable` / `fault`.
   */
  putResultChunks(taskId: string, chunks: readonly Uint8Array[]): Promise<boolean>;

  /**
   * Chunk `index` (0-based) of `taskId`'s large result, or `undefined` past the last one and for a task without one
   * (read one at a time, so serving a result never holds more than one chunk).
   * @throws {StoreError} `unavailable` / `fault`.
   */
  readResultChunk(taskId: string, index: number): Promise<Uint8Array | undefined>;

  /**
   * Insert a task with status `working` (and its `steps`, if any) and append its `created` event; with `startNow`,
   * also count the first run (`attempt = 1`) and append its `attempt` event.
   * Resolves after the commit (SEP-2663 E14: a `tasks/get` right after sees it).
   * @throws {StoreError} `conflict` when `(ownerKey, idempotencyKey)` is already taken (also by a concurrent
   *   create in another process); nothing of this task is written.
   */
  create(task: NewTask): Promise<TaskRecord>;

  /**
   * Read one task within `scope`; `undefined` when missing, foreign or of another generation. A task past its
   * `expiresAt` is still returned until `expireDue` deleted it (visibility is judged above the store).
   */
  get(taskId: string, scope: TaskScope): Promise<TaskRecord | undefined>;

  /** Read one task without scope checks (runtime use only, never on behalf of a requestor). */
  getUnscoped(taskId: string): Promise<TaskRecord | undefined>;

  /** The stored result or error of a terminal task; `undefined` when not (yet) stored. */
  getOutcome(taskId: string): Promise<TaskOutcome | undefined>;

  /**
   * Conditional status write (see {@link TransitionRequest}) plus its `status` event, in one transaction.
   * Returns the updated task, or `undefined` when the task is missing or the condition did not hold
   * (e.g. already terminal: terminal states never change).
   */
  transition(taskId: string, request: TransitionRequest): Promise<TaskRecord | undefined>;

  /**
   * Write statusMessage-only changes of non-terminal tasks in one transaction (one `message` event each).
   * Callers coalesce; the store applies what it is given. Entries for terminal or missing tasks are ignored.
   */
  writeStatusMessages(entries: ReadonlyArray<{ taskId: string; statusMessage: string | null; now: number }>): Promise<void>;

  /**
   * One page of an owner's tasks of one generation, ordered by `seq` ascending, starting after `afterSeq`.
   * Like {@link get}, rows past their `expiresAt` are included until they are deleted.
   */
  list(scope: TaskScope & { generation: TaskGeneration }, page: { afterSeq: number; limit: number }): Promise<TaskRecord[]>;

  /**
   * Tasks of any generation matching `query`, ordered by `seq` descending (newest first). Like {@link get}, rows
   * past their `expiresAt` are included until they are deleted. Port addition (issue 16): the dashboard's list.
   */
  browse(query: TaskBrowseQuery): Promise<TaskRecord[]>;

  /**
   * The committed events of one task, ascending by `seq`, at most `limit` (the oldest first). Port addition
   * (issue 16): the dashboard's timeline; `[]` for an unknown task.
   */
  listTaskEvents(taskId: string, limit: number): Promise<TaskEvent[]>;

  /**
   * Start a run: `attempt += 1`, lease to `leaseOwner` for `leaseMs` from the store's now, `attempt` event (its `at`
   * is the store's now). Applies only while the task is `working` and the lease is held by `leaseOwner` or has
   * lapsed (`leaseExpiresAt <= now` on the store's clock).
   * Port change (issue 11): takes a duration instead of the caller's `leaseExpiresAt` and `now`.
   */
  startAttempt(taskId: string, leaseOwner: string, leaseMs: number): Promise<TaskRecord | undefined>;

  /**
   * Extend the leases `leaseOwner` holds on non-terminal `taskIds` to the store's now + `leaseMs`; returns the ids
   * whose lease was renewed. `leaseMs = 0` lets them lapse at once (release for a fast takeover).
   * Port change (issue 11): takes a duration instead of the caller's `leaseExpiresAt`.
   */
  renewLeases(leaseOwner: string, taskIds: readonly string[], leaseMs: number): Promise<string[]>;

  /**
   * Start runs of up to `limit` unexpired `working` tasks that no one holds a lease on (never leased since their
   * creation, or resumed after their questions were answered), oldest `seq` first, in one write: `attempt += 1`,
   * lease to `leaseOwner` for `leaseMs` from the store's now, one `attempt` event each (`at` = the store's now).
   * Such a task has had no run since it was created or parked, so starting it needs no recovery decision. A task
   * whose lease merely lapsed keeps its owner and is left to {@link claimLapsed}. Concurrent claimers (any
   * process) get disjoint sets; a backend with row locks skips rows another transaction holds.
   * Port addition (issue 11): the worker's claim of runnable tasks.
   * @returns the started tasks, ascending by `seq`.
   */
  claimRunnable(leaseOwner: string, leaseMs: number, limit: number): Promise<TaskRecord[]>;

  /**
   * Give up the leases `leaseOwner` holds on `working` tasks among `taskIds`: the lease lapses at once on the store's
   * clock (the owner stays, so the next claim is a recovery decision, like after a crash) and a `released` event is
   * appended for each, which wakes other workers' recovery. Returns the ids released.
   * Port addition (issue 11): the drain of a worker.
   */
  releaseLeases(leaseOwner: string, taskIds: readonly string[]): Promise<string[]>;

  /**
   * Give back the runs `leaseOwner` holds on `working` tasks among `taskIds` whose tool never started (a draining
   * worker aborted them while they waited for a thread, or before it launched them): the run is not counted
   * (`attempt -= 1`, never below 0) and lease and owner are cleared, so the task is runnable again like one never
   * claimed — the next claim starts it with no recovery decision, whether or not its tool is safe to re-run, since
   * nothing ran. One `released` event each (payload `{leaseOwner, unstarted: true}`), which wakes other workers.
   * Returns the ids given back. Port addition (issue 22): a drain never turns a run that did not start into an
   * `interrupted` failure elsewhere.
   */
  releaseUnstarted(leaseOwner: string, taskIds: readonly string[]): Promise<string[]>;

  /**
   * Atomically take over up to `limit` unexpired `working` tasks whose lease lapsed (`leaseExpiresAt <= now` on the
   * store's clock) or that have none, leasing them to `leaseOwner` for `leaseMs`. `input_required` tasks hold no
   * lease and are skipped. Concurrent claimers (any process) get disjoint sets; a backend with row locks skips rows
   * another transaction holds instead of waiting for them.
   * Port change (issue 11): takes a duration instead of the caller's `now` and `leaseExpiresAt`.
   */
  claimLapsed(leaseOwner: string, leaseMs: number, limit: number): Promise<TaskRecord[]>;

  /**
   * Register a process under `entry.instanceId` with a heartbeat lapsing `ttlMs` from the store's now. Refused
   * (`registered: false`, nothing written) while another token holds the id with a live heartbeat, unless that
   * token is `replaceToken` (the caller established that its process is gone). Port addition (issue 11 item 6).
   */
  registerProcess(entry: NewProcessEntry, ttlMs: number, replaceToken?: string): Promise<RegisterProcessResult>;

  /** Renew the heartbeat of `instanceId` while `token` holds it; `false` when another token (or nobody) does. */
  heartbeatProcess(instanceId: string, token: string, ttlMs: number): Promise<boolean>;

  /** Remove the registration of `instanceId` if `token` holds it (a clean stop). */
  deregisterProcess(instanceId: string, token: string): Promise<void>;

  /** Every registered process, by instance id, `live` judged on the store's clock. */
  listProcesses(): Promise<ProcessRecord[]>;

  /**
   * Make every lease `leaseOwner` holds on a `working` task lapse now (a `released` event each, which wakes other
   * workers' recovery): the takeover of a process restarted under the same id. Returns the task ids.
   */
  releaseLeasesOf(leaseOwner: string): Promise<string[]>;

  /**
   * Delete the registrations whose heartbeat lapsed and release every lease their processes hold, in one
   * transaction (as {@link releaseLeasesOf}). Returns the instance ids reaped and the tasks released.
   */
  reapLapsedProcesses(): Promise<{ instanceIds: string[]; taskIds: string[] }>;

  /**
   * Park a running task for input: insert `requests` as `pending` and move `working → input_required` in one
   * transaction, only while `leaseOwner` holds the lease. The lease is cleared (a parked task holds none and
   * recovery skips it) and the run that parked is not counted in `attempt` (`attempt -= 1`), since asking for
   * input is not a failure. Appends an `input` event (payload `{added: [keys]}`) and the `status` event.
   * @returns the parked task, or `undefined` when the condition did not hold (cancelled, expired, lease lost).
   */
  requestInput(
    taskId: string,
    requests: ReadonlyArray<{ key: string; request: JsonObject }>,
    change: { leaseOwner: string; statusMessage: string | null; now: number },
  ): Promise<TaskRecord | undefined>;

  /** Every input request of a task (any state), in creation order; `[]` for a missing task. */
  listInputRequests(taskId: string): Promise<InputRequestRecord[]>;

  /**
   * Apply answers to an `input_required` task in one transaction (SEP-2663 E25–E27):
   * - `answers`: each key still `pending` becomes `answered` with its response (the first answer wins);
   * - `retire`: each key still `pending` becomes `superseded` (e.g. an answer that failed `requestedSchema`),
   *   keeping the rejected response;
   * - `add`: new `pending` requests (a question asked again under a new key); an entry with `replaces` is added
   *   only if this call retired that key (so a question answered meanwhile elsewhere is not asked again);
   * - keys that are not pending are ignored and not reported as accepted.
   * When no request is pending afterwards, the task moves `input_required → working` with no lease, so any
   * process may start its next run. Appends an `input` event (payload `{answered, retired, added}`) when anything
   * changed, plus the `status` event when it resumed. Nothing is written unless the task is `input_required`.
   * @returns the keys answered or retired, and the task after the change (`undefined` when missing/not waiting).
   */
  answerInput(
    taskId: string,
    change: {
      answers: ReadonlyArray<{ key: string; response: JsonObject }>;
      retire: ReadonlyArray<{ key: string; response: JsonObject | null }>;
      add: ReadonlyArray<{ key: string; request: JsonObject; replaces?: string }>;
      statusMessage?: string | null;
      now: number;
    },
  ): Promise<{ accepted: string[]; task: TaskRecord | undefined }>;

  /** Up to `limit` unexpired `input_required` tasks whose `lastUpdatedAt <= before` (the input-timeout sweep). */
  listWaitingSince(before: number, limit: number): Promise<TaskRecord[]>;

  /** A journaled step value, or `undefined` when the step never completed. */
  getStep(taskId: string, name: string): Promise<{ value: JsonValue } | undefined>;

  /** Journal a completed step (first write wins; later writes for the same name are ignored). */
  putStep(taskId: string, name: string, value: JsonValue): Promise<void>;

  /**
   * One document of a tool's per-owner state (what a tool keeps between calls of one owner, e.g.
   * check_infrastructure's last snapshot), or `undefined` when none is stored. Not tied to a task: it outlives
   * tasks and their expiry. Scoped by `ownerKey` and `tool`; no caller ever reads another owner's state.
   */
  getToolState(ownerKey: string, tool: string, key: string): Promise<JsonValue | undefined>;

  /**
   * Store (replace) one document of a tool's per-owner state, at `now` (epoch ms).
   * @throws {StoreError} `invalid` when the JSON exceeds {@link MAX_TOOL_STATE_BYTES}, a name is empty or longer
   *   than {@link MAX_TOOL_STATE_NAME}, or the key is new and the owner already holds {@link MAX_TOOL_STATE_KEYS}
   *   keys for the tool (checked in the write's own statement; two concurrent new keys may both pass); nothing is
   *   written.
   */
  putToolState(ownerKey: string, tool: string, key: string, value: JsonValue, now: number): Promise<void>;

  /**
   * Expire up to `limit` tasks with `expiresAt <= now` on the store's clock: append an `expired` event (`at` = that
   * now), then delete the task, everything hanging off it and its other events. `expired` events older than
   * `EXPIRED_EVENT_RETENTION_MS` are deleted too (up to `limit`). Returns the expired ids.
   * Port changes (issue 11): the sweep judges expiry on the store's clock, so every process's sweeper agrees; a
   * task's events go with it (retention).
   */
  expireDue(limit: number): Promise<string[]>;

  /**
   * Give storage freed by deletions back where the backend needs to be asked (SQLite: an incremental vacuum step on
   * a file created with `auto_vacuum = INCREMENTAL`; PostgreSQL: nothing, autovacuum does it). Never required for
   * correctness. Port addition (issue 11).
   */
  compact(): Promise<void>;

  /**
   * Committed events with `seq > afterSeq`, ascending, at most `limit` (the cross-process tail reads this).
   * Because `seq` is gap-free and assigned in commit order (see {@link TaskEvent.seq}), a tail that moves its
   * cursor to the last `seq` it read never misses an event committed later, in any process.
   */
  readEventsAfter(afterSeq: number, limit: number): Promise<TaskEvent[]>;

  /**
   * The highest committed event `seq` (0 when none), also when retention has deleted that event since; every event
   * up to it that still exists is visible to `readEventsAfter`.
   */
  lastEventSeq(): Promise<number>;

  /** Subscribe to events committed by this store instance; returns an unsubscribe function. */
  onEvent(listener: TaskEventListener): () => void;

  /**
   * Optional push of commits made by *other* processes (PostgreSQL: `LISTEN mcp_tasks_feed`): `wake` is called
   * soon after any commit that appended events, with the feed's last seq after it when known. Best effort — a
   * backend may miss notifications while reconnecting (it then calls `wake(undefined)`), so a reader keeps polling
   * `readEventsAfter` as the fallback. Absent (SQLite): readers poll only.
   * @returns the function that stops watching.
   */
  watchCommits?(wake: CommitWatcher): () => Promise<void>;

  /** The v1 sessions kept next to the tasks, so any instance serves any session (issue 11 item 5). */
  readonly sessions: SessionStore;

  /** The record by which the instances of this store agree on one server secret. */
  readonly serverSecret: ServerSecretStore;

  /**
   * The schema version the database has (`applied`, read from it now, so this also proves it answers) and the one
   * this code expects (`expected`); readiness probes compare them.
   * @throws {StoreError} when the store cannot be reached.
   */
  schemaStatus(): Promise<{ applied: number; expected: number }>;

  /** Finish pending writes and close the backend. */
  close(): Promise<void>;
}
