import { taskEndedAudit } from '../../core/ledger.js';
import type { TaskEvent } from '../../core/ports/feed.js';
import type { TaskBrowseQuery, TaskRows, TaskScope, TaskWithOutcome, TransitionRequest } from '../../core/ports/rows.js';
import { createdEventPayload } from '../../core/session-store.js';
import { isTerminal } from '../../core/state-machine.js';
import { StoreError } from '../../core/store-error.js';
import { checkTransition, idempotencyKeyTaken, sessionGone, toLimit } from '../../core/store-rules.js';
import type { NewTask, TaskGeneration, TaskRecord, TaskStatus } from '../../core/task.js';
import { outcomeBody, toOutcome } from '../codec.js';
import { auditValues } from '../ledger-codec.js';
import type { SqliteContext } from './context.js';
import type { TaskRow } from './sql.js';

/**
 * The rows port on SQLite (see {@link TaskRows}): every write is one operation of the group commit, so concurrent
 * writes share a transaction and SQLite's write lock settles races with other processes; reads are synchronous
 * statements that only ever see committed state.
 */
export class SqliteRows implements TaskRows {
  constructor(private readonly ctx: SqliteContext) {}

  create(task: NewTask): Promise<TaskRecord> {
    return this.ctx.committer.enqueue((events) => insertCreated(this.ctx, events, task));
  }

  async get(taskId: string, scope: TaskScope): Promise<TaskRecord | undefined> {
    const row = await this.ctx.readDurable('read a task', () => this.ctx.stmt.getScoped.get(scopedParams(taskId, scope)));
    return row === undefined ? undefined : this.ctx.codec.toRecord(row as TaskRow);
  }

  /** See {@link TaskRows.getWithOutcome}: the task, then (terminal only) its outcome, in one synchronous read. */
  async getWithOutcome(taskId: string, scope: TaskScope, maxOutcomeChars: number): Promise<TaskWithOutcome | undefined> {
    return this.ctx.readDurable('read a task', () => {
      const row = this.ctx.stmt.getScoped.get(scopedParams(taskId, scope)) as TaskRow | undefined;
      if (row === undefined) return undefined;
      const record = this.ctx.codec.toRecord(row);
      if (!isTerminal(record.status)) return { record };
      const stored = this.ctx.stmt.getOutcome.get({ taskId }) as { kind: string; body: string } | undefined;
      if (stored === undefined || stored.body.length > maxOutcomeChars) return { record };
      return { record, outcome: { outcome: toOutcome(stored), chars: stored.body.length } };
    });
  }

  async getUnscoped(taskId: string): Promise<TaskRecord | undefined> {
    const row = await this.ctx.readDurable('read a task', () => this.ctx.stmt.getUnscoped.get({ taskId }));
    return row === undefined ? undefined : this.ctx.codec.toRecord(row as TaskRow);
  }

  /**
   * See {@link TaskRows.transition}. `from` is intersected with the state machine's sources of `to`, so a
   * terminal status never changes even when a caller lists it. Rejects with `invalid` (before writing) when
   * the outcome does not fit `to` (see `checkOutcome`).
   */
  async transition(taskId: string, request: TransitionRequest): Promise<TaskRecord | undefined> {
    const from = checkTransition(request);
    const flags = sourceFlags(from);
    const { stmt } = this.ctx;
    return this.ctx.committer.enqueue((events) => {
      // Inside the write transaction nobody else can change the row, so this is exactly the status replaced. With one
      // source (a return to working, or a caller's one-status `from`) the write itself tells it: no read. A run's end
      // has two sources and still reads it.
      const replaced = from.length === 1 ? from[0] : (stmt.currentStatus.get({ taskId }) as { status: TaskStatus } | undefined)?.status;
      if (replaced === undefined) return undefined;
      const row = stmt.transition.get({
        taskId,
        to: request.to,
        ...flags,
        setMessage: request.statusMessage === undefined ? 0 : 1,
        statusMessage: request.statusMessage ?? null,
        releaseLease: request.releaseLease === true ? 1 : 0,
        leaseOwner: request.leaseOwner ?? null,
        now: request.now,
      }) as TaskRow | undefined;
      if (row === undefined) return undefined;
      if (request.outcome !== undefined) {
        stmt.insertOutcome.run({ taskId, kind: request.outcome.kind, body: outcomeBody(request.outcome) });
      }
      this.ctx.append(events, taskId, 'status', request.to, request.now, { from: replaced, to: request.to });
      const record = this.ctx.codec.toRecord(row);
      if (request.endedAudit) this.ctx.ledger.appendAudit.run(...auditValues(taskEndedAudit(record, request.now, request.endedAudit.reason)));
      return record;
    });
  }

  async writeStatusMessages(entries: ReadonlyArray<{ taskId: string; statusMessage: string | null; now: number }>): Promise<void> {
    if (entries.length === 0) return;
    await this.ctx.committer.enqueue((events) => {
      for (const { taskId, statusMessage, now } of entries) {
        const row = this.ctx.stmt.writeMessage.get({ taskId, statusMessage, now }) as { status: TaskRecord['status'] } | undefined;
        if (row !== undefined) this.ctx.append(events, taskId, 'message', row.status, now, { statusMessage });
      }
    });
  }

  async list(scope: TaskScope & { generation: TaskGeneration }, page: { afterSeq: number; limit: number }): Promise<TaskRecord[]> {
    const rows = await this.ctx.readDurable('list tasks', () =>
      this.ctx.stmt.list.all({ ownerKey: scope.ownerKey, generation: scope.generation, afterSeq: page.afterSeq, limit: toLimit(page.limit) }),
    );
    return (rows as TaskRow[]).map((row) => this.ctx.codec.toRecord(row));
  }

  async browse(query: TaskBrowseQuery): Promise<TaskRecord[]> {
    const rows = await this.ctx.readDurable('browse tasks', () =>
      this.ctx.stmt.browse.all({
        beforeSeq: query.beforeSeq ?? Number.MAX_SAFE_INTEGER,
        ownerKey: query.ownerKey ?? null,
        statuses: query.statuses && query.statuses.length > 0 ? JSON.stringify(query.statuses) : null,
        toolName: query.toolName ?? null,
        createdFrom: query.createdFrom ?? null,
        createdTo: query.createdTo ?? null,
        text: query.text ? query.text.toLowerCase() : null,
        limit: toLimit(query.limit),
      }),
    );
    return (rows as TaskRow[]).map((row) => this.ctx.codec.toRecord(row));
  }
}

/**
 * Insert a new task as `create` does (refusing a taken idempotency key of the task row), inside a write
 * transaction; also the insert of `admitCreate` and of `claimIdempotencyKey`'s task.
 * @throws {StoreError} `conflict` when `(ownerKey, idempotencyKey)` is taken; `gone` when the task requires its
 *   session and the session has no record.
 */
export function insertCreated(ctx: SqliteContext, events: TaskEvent[], task: NewTask): TaskRecord {
  const idempotencyKey = task.idempotencyKey ?? null;
  if (idempotencyKey !== null && ctx.stmt.idempotencyTaken.get({ ownerKey: task.ownerKey, idempotencyKey })) {
    throw idempotencyKeyTaken();
  }
  return insertNewTask(ctx, events, task);
}

/**
 * Insert a task row, its events and steps inside the current batch (see {@link SqliteRows.create}).
 * @throws {StoreError} `gone` when the task requires its session and the session has no record.
 */
export function insertNewTask(ctx: SqliteContext, events: TaskEvent[], task: NewTask): TaskRecord {
  // Inside the write transaction: a DELETE of the session from any process is either before it or after the commit.
  if (task.requireSession === true && !(typeof task.sessionId === 'string' && ctx.stmt.sessionExists.get({ sessionId: task.sessionId }))) {
    throw sessionGone();
  }
  // The created event comes first because its seq becomes the task's seq (see SQL.insertTask).
  const { seq } = ctx.append(events, task.taskId, 'created', 'working', task.createdAt, createdEventPayload(task));
  const params = ctx.codec.newTaskParams(task, ctx.clock.now());
  ctx.stmt.insertTask.run({ ...params, seq });
  const record = ctx.codec.insertedRecord(task, params, seq);
  if (task.startNow === true) ctx.append(events, task.taskId, 'attempt', 'working', task.createdAt, { attempt: 1, leaseOwner: task.leaseOwner });
  // Same savepoint as the row: input gathered before the task exists is never lost or half-written.
  for (const [name, value] of Object.entries(task.steps ?? {})) {
    ctx.stmt.insertStep.run({ taskId: task.taskId, name, value: ctx.codec.stepText(task.taskId, name, value), now: task.createdAt });
  }
  // The request's `call` entry, in the task's own write (issue 25).
  if (task.audit) ctx.ledger.appendAudit.run(...auditValues(task.audit));
  return record;
}

/** The parameters of `getScoped` for `scope`. */
function scopedParams(taskId: string, scope: TaskScope): Record<string, string | null> {
  return { taskId, ownerKey: scope.ownerKey, generation: scope.generation ?? null, session: scope.requireSession ?? null };
}

/**
 * `from` as the two flags of `SQL.transition`: the state machine makes only `working` and `input_required` sources
 * (`ALLOWED_TRANSITIONS`), and the statement tests those two.
 * @throws {StoreError} `invalid` for any other source (a state machine changed without this statement).
 */
function sourceFlags(from: readonly TaskStatus[]): { fromWorking: 0 | 1; fromInputRequired: 0 | 1 } {
  const other = from.find((status) => status !== 'working' && status !== 'input_required');
  if (other !== undefined) throw new StoreError('invalid', `A transition from ${other} is not one the SQLite store can write`);
  return { fromWorking: from.includes('working') ? 1 : 0, fromInputRequired: from.includes('input_required') ? 1 : 0 };
}
