import type { TaskEvent } from '../../core/ports/feed.js';
import type { TaskBrowseQuery, TaskRows, TaskScope, TaskWithOutcome, TransitionRequest } from '../../core/ports/rows.js';
import { createdEventPayload } from '../../core/session-store.js';
import { StoreError } from '../../core/store-error.js';
import { idempotencyKeyTaken, sessionGone, toLimit } from '../../core/store-rules.js';
import type { NewTask, TaskGeneration, TaskRecord } from '../../core/task.js';
import { type RowCodec, type TaskRow, toOutcome } from '../codec.js';
import { auditValues } from '../ledger-codec.js';
import { type BatchTx, type MergedWork, type Query, type Settled, type StagedEvent } from './batch.js';
import { sqlState } from './connection.js';
import type { PostgresContext } from './context.js';
import { LEDGER_SQL } from './ledger-sql.js';
import { MergedReads } from './merged-reads.js';
import { SQL } from './sql.js';
import { PostgresTransitions, transitionItem } from './transitions.js';

/** One requestor read, as {@link TaskRows.getWithOutcome} takes it. */
interface ScopedRead {
  taskId: string;
  scope: TaskScope;
  maxOutcomeChars: number;
}

/** A task row with its small outcome, as the scoped reads return it. */
type OutcomeRow = TaskRow & { outcome_kind: string | null; outcome_body: string | null };

/** Reads one statement answers at most (their arrays are bound as parameters; a longer queue takes several). */
const MAX_MERGED_READS = 64;

/**
 * The rows port on PostgreSQL (see {@link TaskRows}). Creates of one batch are merged into one multi-row INSERT
 * (see {@link PostgresRows.insertTasks}); the transitions of one batch are one statement that locks the rows, applies
 * each condition and stores the outcomes (see {@link PostgresTransitions}); reads are single statements on the pool, the
 * requestors' reads issued in one turn of the event loop one statement together ({@link MergedReads}).
 */
export class PostgresRows implements TaskRows {
  private readonly creates: MergedWork<NewTask, TaskRecord>;
  private readonly transitions: PostgresTransitions;
  /** Requestors' reads issued together, one statement per turn of the event loop. */
  private readonly reads: MergedReads<ScopedRead, TaskWithOutcome>;
  /** The insert parameters of each create, made once (a batch retried after a deadlock, or settled later, reuses them). */
  private readonly params = new WeakMap<NewTask, ReturnType<RowCodec['newTaskParams']>>();

  constructor(private readonly ctx: PostgresContext) {
    this.reads = new MergedReads(
      (read) => this.getOneWithOutcome(read),
      (reads) => this.getManyWithOutcome(reads),
      MAX_MERGED_READS,
      (error) => !(error instanceof StoreError && error.code === 'unavailable'),
    );
    this.transitions = new PostgresTransitions(ctx.codec);
    this.creates = {
      run: (tx, tasks, isolated) => this.insertTasks(tx, tasks, isolated),
      runAlone: (query, tasks) => this.createAlone(query, tasks),
    };
  }

  create(task: NewTask): Promise<TaskRecord> {
    return this.ctx.batcher.enqueueMerged(this.creates, task);
  }

  async get(taskId: string, scope: TaskScope): Promise<TaskRecord | undefined> {
    const [row] = await this.ctx.read<TaskRow>('read a task', SQL.getScoped, [taskId, scope.ownerKey, scope.generation ?? null, scope.requireSession ?? null]);
    return row === undefined ? undefined : this.ctx.codec.toRecord(row);
  }

  /**
   * See {@link TaskRows.getWithOutcome}: one statement (a LEFT JOIN of the outcome), shared with the other reads issued
   * in the same turn of the event loop (`MergedReads`).
   */
  async getWithOutcome(taskId: string, scope: TaskScope, maxOutcomeChars: number): Promise<TaskWithOutcome | undefined> {
    this.ctx.refuseIfClosed('read a task');
    // PostgreSQL text cannot hold NUL, so no task matches such a key; sent, it would fail its statement (22021), and
    // with it every read merged into that statement.
    if ([taskId, scope.ownerKey, scope.generation, scope.requireSession].some((key) => key?.includes('\u0000'))) return undefined;
    return this.reads.read({ taskId, scope, maxOutcomeChars });
  }

  private async getOneWithOutcome(read: ScopedRead): Promise<TaskWithOutcome | undefined> {
    const [row] = await this.ctx.readAdmitted<OutcomeRow>('read a task', SQL.getScopedWithOutcome, [
      read.taskId,
      read.scope.ownerKey,
      read.scope.generation ?? null,
      read.maxOutcomeChars,
      read.scope.requireSession ?? null,
    ]);
    return row === undefined ? undefined : this.withOutcome(row);
  }

  /** The reads of one merged statement, each settled on its own: a row that cannot be decoded fails its read only. */
  private async getManyWithOutcome(reads: readonly ScopedRead[]): Promise<Array<Settled<TaskWithOutcome | undefined>>> {
    const rows = await this.ctx.readAdmitted<OutcomeRow & { ord: string }>('read tasks', SQL.getScopedWithOutcomeMany, [
      reads.map((r) => r.taskId),
      reads.map((r) => r.scope.ownerKey),
      reads.map((r) => r.scope.generation ?? null),
      reads.map((r) => r.maxOutcomeChars),
      reads.map((r) => r.scope.requireSession ?? null),
    ]);
    const outcomes: Array<Settled<TaskWithOutcome | undefined>> = reads.map(() => ({ ok: true, value: undefined }));
    for (const row of rows) {
      try {
        outcomes[Number(row.ord) - 1] = { ok: true, value: this.withOutcome(row) };
      } catch (error) {
        outcomes[Number(row.ord) - 1] = { ok: false, error };
      }
    }
    return outcomes;
  }

  private withOutcome(row: OutcomeRow): TaskWithOutcome {
    const record = this.ctx.codec.toRecord(row);
    if (row.outcome_kind === null || row.outcome_body === null) return { record };
    return { record, outcome: { outcome: toOutcome({ kind: row.outcome_kind, body: row.outcome_body }), chars: row.outcome_body.length } };
  }

  async getUnscoped(taskId: string): Promise<TaskRecord | undefined> {
    const [row] = await this.ctx.read<TaskRow>('read a task', SQL.getUnscoped, [taskId]);
    return row === undefined ? undefined : this.ctx.codec.toRecord(row);
  }

  /**
   * See {@link TaskRows.transition}: the transitions of one batch are one statement that locks their rows, applies
   * each condition and stores the outcomes; alone in their batch (runs completing, cancels), one autocommit statement
   * with their events (see {@link PostgresTransitions}).
   */
  async transition(taskId: string, request: TransitionRequest): Promise<TaskRecord | undefined> {
    return this.ctx.batcher.enqueueMerged(this.transitions, transitionItem(taskId, request));
  }

  async writeStatusMessages(entries: ReadonlyArray<{ taskId: string; statusMessage: string | null; now: number }>): Promise<void> {
    if (entries.length === 0) return;
    // One statement per group of distinct tasks: an UPDATE applies at most one source row per task.
    const groups: Array<Array<(typeof entries)[number]>> = [];
    for (const entry of entries) {
      const group = groups.find((g) => !g.some((e) => e.taskId === entry.taskId));
      if (group) group.push(entry);
      else groups.push([entry]);
    }
    await this.ctx.batcher.enqueue(async (tx) => {
      for (const group of groups) {
        const rows = await tx.query<{ task_id: string; status: TaskRecord['status']; ord: number }>(SQL.writeMessages, [
          group.map((e) => e.taskId),
          group.map((e) => e.statusMessage),
          group.map((e) => e.now),
        ]);
        for (const row of rows.sort((a, b) => a.ord - b.ord)) {
          const entry = group[row.ord - 1] as (typeof entries)[number];
          tx.append(entry.taskId, 'message', row.status, entry.now, { statusMessage: entry.statusMessage });
        }
      }
    });
  }

  async list(scope: TaskScope & { generation: TaskGeneration }, page: { afterSeq: number; limit: number }): Promise<TaskRecord[]> {
    const rows = await this.ctx.read<TaskRow>('list tasks', SQL.list, [scope.ownerKey, scope.generation, page.afterSeq, toLimit(page.limit)]);
    return rows.map((row) => this.ctx.codec.toRecord(row));
  }

  async browse(query: TaskBrowseQuery): Promise<TaskRecord[]> {
    const rows = await this.ctx.read<TaskRow>('browse tasks', SQL.browse, [
      query.beforeSeq ?? Number.MAX_SAFE_INTEGER,
      query.ownerKey ?? null,
      query.statuses && query.statuses.length > 0 ? [...query.statuses] : null,
      query.toolName ?? null,
      query.createdFrom ?? null,
      query.createdTo ?? null,
      query.text ? query.text.toLowerCase() : null,
      toLimit(query.limit),
    ]);
    return rows.map((row) => this.ctx.codec.toRecord(row));
  }

  /**
   * Insert one task and append its events in a batch transaction (as {@link create}, but inside another operation:
   * `admitCreate`, `claimIdempotencyKey`).
   * @throws {StoreError} `conflict` when its `(owner, idempotency key)` is taken.
   */
  async insertOne(tx: BatchTx, task: NewTask): Promise<TaskRecord> {
    const results: Array<Settled<TaskRecord> | undefined> = [undefined];
    await this.settleInserted(tx.query, [task], [0], results, await this.insertRows(tx, [task]));
    const [result] = settledAll(results);
    if (!result?.ok) throw result?.error;
    for (const event of createdEvents([task], results)) tx.append(event.taskId, event.kind, event.status, event.at, event.payload);
    return result.value;
  }

  /**
   * Every create of one batch in one multi-row INSERT (and one for their steps). An `(owner, idempotency key)` that
   * is taken — in the database, by a concurrent create of another instance, or earlier in this batch — is a
   * conflict for that create alone. Should the INSERT fail (a task id that exists), the first run of the batch
   * throws and the batch runs again `isolated`: then the creates are inserted one at a time, each under its own
   * savepoint, so only the failing ones reject.
   */
  private async insertTasks(tx: BatchTx, tasks: readonly NewTask[], isolated: boolean): Promise<Array<Settled<TaskRecord>>> {
    const plan = planCreates(tasks);
    const groups = isolated ? plan.fresh.map((i) => [i]) : [plan.fresh];
    for (const group of groups) {
      const batch = group.map((i) => tasks[i] as NewTask);
      if (!isolated) {
        await this.settleInserted(tx.query, batch, group, plan.results, await this.insertRows(tx, batch));
        continue;
      }
      await tx.query(SQL.itemSavepoint);
      try {
        await this.settleInserted(tx.query, batch, group, plan.results, await this.insertRows(tx, batch));
        await tx.query(SQL.itemRelease);
      } catch (error) {
        await tx.query(SQL.itemRollbackTo);
        await tx.query(SQL.itemRelease);
        if (sqlState(error) === undefined) throw error;
        plan.results[group[0] as number] = { ok: false, error };
      }
    }
    for (const event of createdEvents(tasks, plan.results)) tx.append(event.taskId, event.kind, event.status, event.at, event.payload);
    return settledAll(plan.results);
  }

  /** A batch of creates alone: one autocommit statement writes rows, steps and events (see `SQL.createTasksAlone`). */
  private async createAlone(query: Query, tasks: readonly NewTask[]): Promise<{ results: Array<Settled<TaskRecord>>; events: TaskEvent[] }> {
    const plan = planCreates(tasks);
    const fresh = plan.fresh.map((i) => tasks[i] as NewTask);
    const candidates = createdEvents(
      fresh,
      fresh.map(() => ({ ok: true, value: undefined as unknown as TaskRecord })),
    );
    const steps = stepRows(this.ctx.codec, fresh);
    const rows = await query<InsertedRow & { feed_base: number }>(SQL.createTasksAlone, [
      ...this.taskColumns(fresh),
      steps.map((s) => s[0]),
      steps.map((s) => s[1]),
      steps.map((s) => s[2]),
      steps.map((s) => s[3]),
      candidates.map((e) => e.taskId),
      candidates.map((e) => e.kind),
      candidates.map((e) => e.status),
      candidates.map((e) => e.at),
      candidates.map((e) => (e.payload === null ? null : JSON.stringify(e.payload))),
      ...auditColumns(fresh),
    ]);
    // The statement committed: from here nothing may throw (the batcher would take this unit as unwritten and run
    // it again, or reject creates that committed). A follow-up read that fails settles only the create it was for.
    await this.settleInserted(query, fresh, plan.fresh, plan.results, rows, true);
    const base = rows[0]?.feed_base ?? 0;
    const events = createdEvents(tasks, plan.results).map((event, i) => ({ seq: base + i + 1, ...event }));
    return { results: settledAll(plan.results), events };
  }

  /** Insert `tasks` and their steps; the rows the database inserted (a taken idempotency key is left out). */
  private async insertRows(tx: BatchTx, tasks: readonly NewTask[]): Promise<InsertedRow[]> {
    if (tasks.length === 0) return [];
    const rows = await tx.query<InsertedRow>(SQL.insertTasks, this.taskColumns(tasks));
    const inserted = new Set(rows.map((row) => row.task_id));
    const steps = stepRows(
      this.ctx.codec,
      tasks.filter((task) => inserted.has(task.taskId)),
    );
    if (steps.length > 0) {
      await tx.query(SQL.insertSteps, [steps.map((s) => s[0]), steps.map((s) => s[1]), steps.map((s) => s[2]), steps.map((s) => s[3])]);
    }
    const audited = tasks.filter((task) => task.audit !== undefined && inserted.has(task.taskId));
    if (audited.length > 0) await tx.query(LEDGER_SQL.appendAudit, auditColumns(audited));
    return rows;
  }

  /** Parameters `$1…$20` of the multi-row task INSERT. */
  private taskColumns(tasks: readonly NewTask[]): unknown[] {
    const params = tasks.map((task) => this.paramsOf(task));
    const column = (name: string) => params.map((p) => p[name] ?? null);
    return [
      this.ctx.clockNow(),
      column('taskId'),
      column('ownerKey'),
      column('generation'),
      column('protocolVersion'),
      column('toolName'),
      column('arguments'),
      column('clientCapabilities'),
      column('progressToken'),
      column('statusMessage'),
      column('createdAt'),
      column('ttlMs'),
      column('pollIntervalMs'),
      column('expiresAt'),
      column('attempt'),
      column('leaseOwner'),
      tasks.map((task) => (task.leaseOwner === null ? null : task.leaseMs)),
      column('idempotencyKey'),
      column('requestDigest'),
      // A create that requires its session names it ('' when it has none: no record has that id, so it is refused).
      tasks.map((task) => (task.requireSession === true ? (task.sessionId ?? '') : null)),
    ];
  }

  /**
   * Record the created task for every inserted row, and for every create the database skipped a conflict — or, for
   * one that requires its session when that session has no record, `gone`. A record, once deleted, never comes back
   * (ids are random), so a session found after the INSERT existed during it: that create was skipped for its key.
   * `committed`: the INSERT already committed (a one-statement form), so a failing follow-up read rejects only the
   * create it was for instead of throwing.
   */
  private async settleInserted(
    query: Query,
    tasks: readonly NewTask[],
    indexes: readonly number[],
    results: Array<Settled<TaskRecord> | undefined>,
    rows: readonly InsertedRow[],
    committed = false,
  ): Promise<void> {
    const byId = new Map(rows.map((row) => [row.task_id, row]));
    for (const [k, task] of tasks.entries()) {
      const row = byId.get(task.taskId);
      // Exactly what the INSERT wrote, plus the seq and lease end only the database knew.
      const record = row && this.ctx.codec.insertedRecord(task, { ...this.paramsOf(task), leaseExpiresAt: row.lease_expires_at }, row.seq);
      if (record) results[indexes[k] as number] = { ok: true, value: record };
      else {
        try {
          const gone = task.requireSession === true && (await query(SQL.sessionExists, [task.sessionId ?? ''])).length === 0;
          results[indexes[k] as number] = { ok: false, error: gone ? sessionGone() : idempotencyKeyTaken() };
        } catch (error) {
          if (!committed) throw error;
          results[indexes[k] as number] = { ok: false, error };
        }
      }
    }
  }

  private paramsOf(task: NewTask): ReturnType<RowCodec['newTaskParams']> {
    let params = this.params.get(task);
    if (!params) this.params.set(task, (params = this.ctx.codec.newTaskParams(task, 0)));
    return params;
  }
}

/** What the task INSERT returns per inserted row. */
interface InsertedRow {
  task_id: string;
  seq: number;
  lease_expires_at: number | null;
}

/**
 * Which creates of a batch go to the database: all but a repeat of an `(owner, idempotency key)` earlier in the
 * batch (the first one wins; the repeat is a conflict at once).
 */
function planCreates(tasks: readonly NewTask[]): { fresh: number[]; results: Array<Settled<TaskRecord> | undefined> } {
  const results: Array<Settled<TaskRecord> | undefined> = tasks.map(() => undefined);
  const seen = new Set<string>();
  const fresh: number[] = [];
  tasks.forEach((task, i) => {
    const key = task.idempotencyKey == null ? undefined : JSON.stringify([task.ownerKey, task.idempotencyKey]);
    if (key !== undefined && seen.has(key)) results[i] = { ok: false, error: idempotencyKeyTaken() };
    else {
      if (key !== undefined) seen.add(key);
      fresh.push(i);
    }
  });
  return { fresh, results };
}

/** The events of the creates that succeeded, in queue order: `created`, then `attempt` for `startNow`. */
function createdEvents(tasks: readonly NewTask[], results: ReadonlyArray<Settled<TaskRecord> | undefined>): StagedEvent[] {
  return tasks.flatMap((task, i): StagedEvent[] => {
    if (!results[i]?.ok) return [];
    const created: StagedEvent = { taskId: task.taskId, kind: 'created', status: 'working', at: task.createdAt, payload: createdEventPayload(task) };
    if (task.startNow !== true) return [created];
    return [created, { taskId: task.taskId, kind: 'attempt', status: 'working', at: task.createdAt, payload: { attempt: 1, leaseOwner: task.leaseOwner } }];
  });
}

/** The nine column arrays of the `call` audit entries of `tasks` that have one (`NewTask.audit`), in order. */
function auditColumns(tasks: readonly NewTask[]): unknown[][] {
  const rows = tasks.flatMap((task) => (task.audit ? [auditValues(task.audit)] : []));
  return Array.from({ length: 9 }, (_, column) => rows.map((row) => row[column]));
}

/** `[taskId, name, value JSON, createdAt]` for every journaled step of `tasks`. */
function stepRows(codec: RowCodec, tasks: readonly NewTask[]): Array<readonly [string, string, string, number]> {
  return tasks.flatMap((task) =>
    Object.entries(task.steps ?? {}).map(([name, value]) => [task.taskId, name, codec.stepText(task.taskId, name, value), task.createdAt] as const),
  );
}

function settledAll(results: ReadonlyArray<Settled<TaskRecord> | undefined>): Array<Settled<TaskRecord>> {
  return results.map((result) => result ?? { ok: false, error: new StoreError('fault', 'Task store failed to write: create not settled') });
}
