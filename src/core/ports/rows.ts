import type { NewTask, TaskGeneration, TaskOutcome, TaskRecord, TaskStatus } from '../task.js';

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
  /**
   * Only while the record of this v1 session exists (`SessionStore`): the session check of a request folded into
   * its first read (issue 25). A session deleted on any instance makes the read answer like an unknown id, and the
   * adapter then answers the request on the path that reads the session (HTTP 404).
   */
  requireSession?: string;
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
   * with `isError: true`; other statuses take none. A mismatch is refused with `StoreError` `invalid` before
   * anything is written (`checkOutcome` in `core/store-rules.ts`).
   */
  outcome?: TaskOutcome;
  /** When set, the write applies only while this instance holds the lease (a lost lease discards the outcome). */
  leaseOwner?: string;
  /** Clear the lease in the same write (any terminal transition and `input_required` do this). */
  releaseLease?: boolean;
  /** Epoch ms; becomes `lastUpdatedAt`. */
  now: number;
  /**
   * Append the task's `task.ended` audit entry (`taskEndedAudit`, `core/ledger.ts`) in the same write, only when the transition
   * applies: the trail holds the end exactly when it committed — never lost to a crash between two writes, never
   * written for an outcome that was discarded — and a run's end costs no second write (issue 25). `reason`: a
   * runtime failure's reason (`detail: {reason}`).
   */
  endedAudit?: { reason?: string };
}

/** A task read with its small outcome (see {@link TaskRows.getWithOutcome}). */
export interface TaskWithOutcome {
  record: TaskRecord;
  /** The outcome and the length of its stored JSON body (characters), when terminal and small enough. */
  outcome?: { outcome: TaskOutcome; chars: number };
}

/**
 * Task rows (port "rows"): create, read, the conditional status write (SEP-2663's state machine, `core/state-machine.ts`)
 * and statusMessage writes. Every write appends its events to the feed (see `TaskFeed`) in the same transaction.
 * Errors as every port of the store: only a `StoreError` (codes `conflict`, `invalid`, `unavailable`,
 * `schema_mismatch`, `fault`); a condition that does not hold is reported by the return value, never thrown.
 */
export interface TaskRows {
  /**
   * Insert a task with status `working` (and its `steps`, if any) and append its `created` event; with `startNow`,
   * also count the first run (`attempt = 1`) and append its `attempt` event.
   * Resolves after the commit (SEP-2663 E14: a `tasks/get` right after sees it).
   * @throws {StoreError} `conflict` when `(ownerKey, idempotencyKey)` is already taken (also by a concurrent
   *   create in another process); `gone` when `requireSession` is set and the session's record does not exist;
   *   nothing of this task is written.
   */
  create(task: NewTask): Promise<TaskRecord>;

  /**
   * Read one task within `scope`; `undefined` when missing, foreign or of another generation. A task past its
   * `expiresAt` is still returned until `expireDue` deleted it (visibility is judged above the store).
   */
  get(taskId: string, scope: TaskScope): Promise<TaskRecord | undefined>;

  /**
   * {@link get}, with the stored outcome of a terminal task when its JSON body is at most `maxOutcomeChars`
   * characters (`chars`: that length): one read where the requestor's `tasks/result` made two (issue 25).
   * `outcome` is absent for a task that is not terminal, has no stored outcome, or a larger one.
   */
  getWithOutcome(taskId: string, scope: TaskScope, maxOutcomeChars: number): Promise<TaskWithOutcome | undefined>;

  /** Read one task without scope checks (runtime use only, never on behalf of a requestor). */
  getUnscoped(taskId: string): Promise<TaskRecord | undefined>;

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
}
