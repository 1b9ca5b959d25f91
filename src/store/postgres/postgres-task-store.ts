import type pg from 'pg';
import type { Clock } from '../../core/clock.js';
import { silentLogger, type Logger } from '../../core/logger.js';
import { StoreError } from '../../core/store-error.js';
import { checkInputRequests, checkResultChunks, checkTransition, EXPIRED_EVENT_RETENTION_MS, idempotencyKeyTaken, toLimit, toolStateJson, tooManyToolStateKeys, quotaRefusal } from '../../core/store-rules.js';
import { MAX_TOOL_STATE_KEYS, type CreateAdmission, type CommitWatcher, type CreateQuota, type QuotaRefusal, type TaskBrowseQuery, type TaskEvent, type TaskEventListener, type TaskScope, type TaskStore, type TransitionRequest } from '../../core/store.js';
import { TaskEventListeners } from '../../core/task-event-listeners.js';
import type { InputRequestRecord, JsonValue, NewTask, TaskGeneration, TaskOutcome, TaskRecord } from '../../core/task.js';
import { outcomeBody, RowCodec, toEvent, toOutcome, type EventRow, type InputRequestRow, type TaskRow } from '../codec.js';
import type { FieldCipher } from '../field-cipher.js';
import { toProcess, type ProcessRow } from '../process-row.js';
import type { NewProcessEntry, ProcessRecord, RegisterProcessResult } from '../../core/process-record.js';
import { PostgresBatcher, type BatchTx, type MergedWork, type PostgresBatchStats, type Query, type Settled, type StagedEvent } from './batch.js';
import { createPool, sqlState, toStoreError, type PostgresConnectionOptions } from './connection.js';
import { listenForCommits } from './feed-listener.js';
import { applyAnswers, parkForInput } from './input-requests.js';
import { createdEventPayload, type ServerSecretStore, type SessionStore } from '../../core/session-store.js';
import { serverSecretTable, sessionTable } from '../session-table.js';
import { migrate, POSTGRES_MIGRATIONS, SCHEMA } from './migrations.js';
import { SQL } from './sql.js';
import { LEDGER_SQL } from './ledger-sql.js';
import type { KillSwitchRecord } from '../../core/kill-switch.js';
import { KILL_SWITCH_COLUMNS, killSwitchValues, toKillSwitchRecord, type KillSwitchRow } from '../kill-switch-codec.js';
import type { AuditEntry, AuditFilter, AuditRecord, IdempotencyClaim, IdempotencyClaimResult, IdempotencyRecord, NewOperation, OperationFilter, OperationRecord, OperationSettlement } from '../../core/ledger.js';
import { auditValues, newOperationValues, toAuditRecord, toIdempotencyRecord, toOperationRecord, type AuditRow, type IdempotencyRow, type OperationRow } from '../ledger-codec.js';

/** Options of {@link openPostgresTaskStore}. */
export interface PostgresTaskStoreOptions extends PostgresConnectionOptions {
  logger?: Logger;
  /**
   * The store's clock for leases, expiry sweeps, `attempt`/`expired` event times and step stamps. Default: the
   * database's `clock_timestamp()`, so every instance on the database judges a lease on the same clock (no
   * host's clock skew can shorten or steal one). Tests pass a fake clock to drive those rules without sleeping.
   */
  clock?: Clock;
  /** Most writes per batch transaction. Default 256. */
  maxBatchSize?: number;
  /** Batch transactions in flight at once (each holds a pool connection). Default 2. */
  maxInFlightBatches?: number;
  /**
   * Encrypts tool arguments, input requests and answers and journaled steps at rest (`AesGcmFieldCipher`).
   * Default: none (plaintext; encrypted rows are then refused with a `fault` naming their key id).
   */
  encryption?: FieldCipher;
}

/**
 * The durable {@link TaskStore} on PostgreSQL (node-postgres pool, schema `mcp_tasks`).
 *
 * Writes go through a {@link PostgresBatcher}: concurrent writes share a transaction (group commit), all creates of
 * a batch are one multi-row INSERT, and every promise resolves only after its COMMIT (`synchronous_commit` as the
 * server is configured; keep it `on` for the durability the port promises). Reads are single statements on the
 * pool, so they see committed state only. Races between instances are settled by conditional statements and row
 * locks (see `sql.ts`); claiming uses `FOR UPDATE SKIP LOCKED`. Event seqs come from a commit-ordered counter, so
 * `readEventsAfter` tails lose nothing.
 *
 * Errors: a {@link StoreError} — `unavailable` for connection loss and timeouts (no call hangs longer than the
 * connect or statement timeout), `conflict` for an idempotency key taken (also by a concurrent create elsewhere),
 * `invalid` for a broken precondition of the port, `fault` otherwise.
 */
export class PostgresTaskStore implements TaskStore {
  /** Schema versions this instance applied when it opened (empty when another instance already had). */
  readonly appliedMigrations: readonly number[];
  private readonly batcher: PostgresBatcher;
  private readonly listeners: TaskEventListeners;
  private readonly creates: MergedWork<NewTask, TaskRecord>;
  /** The insert parameters of each create, made once (a batch retried after a deadlock, or settled later, reuses them). */
  private readonly params = new WeakMap<NewTask, ReturnType<RowCodec['newTaskParams']>>();
  private closing: Promise<void> | undefined;
  private readonly watchers = new Set<() => Promise<void>>();
  /** v1 sessions in `mcp_tasks.sessions` (see {@link SessionStore}); single statements on the pool. */
  readonly sessions: SessionStore = sessionTable((action, sql, params) => this.read(action, sql, params), `${SCHEMA}.sessions`, (n) => `$${n}`, {
    tasks: `${SCHEMA}.tasks`,
    events: `${SCHEMA}.task_events`,
    payloadSessionId: "(e.payload::jsonb ->> 'sessionId')",
  });
  /** The server-secret record of this database (see {@link ServerSecretStore}). */
  readonly serverSecret: ServerSecretStore = serverSecretTable((action, sql, params) => this.read(action, sql, params), `${SCHEMA}.server_secret`, (n) => `$${n}`);

  private constructor(
    private readonly pool: pg.Pool,
    private readonly clock: Clock | undefined,
    private readonly logger: Logger,
    appliedMigrations: number[],
    options: { maxBatch: number; maxInFlight: number },
    private readonly codec: RowCodec,
    private readonly connection: PostgresConnectionOptions,
  ) {
    this.appliedMigrations = Object.freeze(appliedMigrations);
    this.listeners = new TaskEventListeners(logger);
    this.batcher = new PostgresBatcher(pool, options, (events) => this.listeners.publish(events), logger);
    this.creates = {
      run: (tx, tasks, isolated) => this.insertTasks(tx, tasks, isolated),
      runAlone: (query, tasks) => this.createAlone(query, tasks),
    };
  }

  /** See {@link openPostgresTaskStore}. */
  static async open(options: PostgresTaskStoreOptions): Promise<PostgresTaskStore> {
    const logger = (options.logger ?? silentLogger).child({ component: 'postgres-task-store' });
    const pool = createPool(options, logger);
    try {
      const client = await pool.connect().catch((error: unknown) => {
        throw toStoreError(error, 'connect');
      });
      let applied: number[];
      let lost: Error | undefined;
      // Checked out, the client has no pool listener: a connection lost now must reject, not crash the process.
      const onConnectionError = (error: Error): void => {
        lost = error;
      };
      client.on('error', onConnectionError);
      try {
        applied = await migrate(client);
      } finally {
        client.removeListener('error', onConnectionError);
        client.release(lost);
      }
      if (applied.length > 0) logger.info({ versions: applied }, 'task store schema migrated');
      return new PostgresTaskStore(pool, options.clock, logger, applied, {
        maxBatch: Math.max(1, Math.floor(options.maxBatchSize ?? 256)),
        maxInFlight: Math.max(1, Math.floor(options.maxInFlightBatches ?? 2)),
      }, new RowCodec(options.encryption), options);
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw toStoreError(error, 'open');
    }
  }

  /** Batch counters: `commits` = write transactions, `operations` = writes they carried, `retries` after deadlocks. */
  stats(): PostgresBatchStats {
    return { ...this.batcher.stats };
  }

  /** The store's current time in epoch ms (the database's, unless opened with a clock). */
  async now(): Promise<number> {
    if (this.clock) return this.clock.now();
    const rows = await this.read<{ now: number }>('read the clock', SQL.storeNow, [null]);
    return (rows[0] as { now: number }).now;
  }

  /**
   * See {@link TaskStore.admitCreate}: one operation of the write batch, under an advisory lock of the owner key
   * (held to the batch's commit), which serialises the creates of one owner across every instance; a refusal
   * returns at once and holds nothing back. Batches locking several owners in opposite orders may deadlock: the
   * database aborts one and the batcher runs it again.
   */
  admitCreate(task: NewTask, quota: CreateQuota): Promise<CreateAdmission> {
    return this.batcher.enqueue(async (tx): Promise<CreateAdmission> => {
      const refused = await this.refusalFor(tx, task, quota);
      if (refused) return { admitted: false, ...refused };
      return { admitted: true, task: await this.insertOne(tx, task) };
    });
  }

  /** See {@link TaskStore.putResultChunks}: its own transaction (a 64 MiB result must not hold the write batch back). */
  async putResultChunks(taskId: string, chunks: readonly Uint8Array[]): Promise<boolean> {
    checkResultChunks(chunks);
    return this.inTransaction('store result chunks', async (client) => {
      if ((await client.query(SQL.lockTaskForChunks, [taskId])).rowCount === 0) return false;
      await client.query(SQL.deleteResultChunks, [taskId]);
      for (const [index, chunk] of chunks.entries()) await client.query(SQL.insertResultChunk, [taskId, index, Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)]);
      return true;
    });
  }

  /** See {@link TaskStore.readResultChunk}. */
  async readResultChunk(taskId: string, index: number): Promise<Uint8Array | undefined> {
    const [row] = await this.read<{ data: Buffer }>('read a result chunk', SQL.readResultChunk, [taskId, index]);
    return row?.data;
  }

  /** Run `work` in a transaction of its own on one pooled client (rolled back, and the error mapped, when it throws). */
  private async inTransaction<T>(action: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    if (this.closing) throw new StoreError('fault', `Task store failed to ${action}: store is closed`);
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw toStoreError(error, action);
    }
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((rollbackError: unknown) => {
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      });
      throw toStoreError(error, action);
    } finally {
      client.release(broken);
    }
  }

  /**
   * In a batch transaction, under the owner's advisory lock: which quota refuses `task`, or `undefined` after
   * recording its create for the window (the caller inserts the task in the same transaction). After the lock each
   * count sees every create of the owner committed before (READ COMMITTED: a fresh snapshot per statement).
   */
  private async refusalFor(tx: BatchTx, task: NewTask, quota: CreateQuota): Promise<QuotaRefusal | undefined> {
    const { ownerKey, createdAt } = task;
    await tx.query(SQL.lockOwner, [ownerKey]);
    await tx.query(SQL.pruneAdmissions, [createdAt - quota.windowMs]);
    const [window] = quota.maxCreates === null ? [] : await tx.query<{ count: number; oldest: string | null }>(SQL.windowAdmissions, [ownerKey]);
    const [active] = quota.maxActive === null ? [] : await tx.query<{ count: number }>(SQL.activeOfOwner, [ownerKey, this.clockNow()]);
    const refused = quotaRefusal(quota, createdAt, {
      ...(window ? { window: { count: window.count, oldest: window.oldest === null ? null : Number(window.oldest) } } : {}),
      ...(active ? { active: active.count } : {}),
    });
    if (!refused) await tx.query(SQL.recordAdmission, [task.taskId, ownerKey, createdAt]);
    return refused;
  }

  /** Insert one task and append its events in a batch transaction (as {@link create}, but inside another operation). */
  private async insertOne(tx: BatchTx, task: NewTask): Promise<TaskRecord> {
    const results: Array<Settled<TaskRecord> | undefined> = [undefined];
    this.settleInserted([task], [0], results, await this.insertRows(tx, [task]));
    const [result] = settledAll(results);
    if (!result?.ok) throw result?.error;
    for (const event of createdEvents([task], results)) tx.append(event.taskId, event.kind, event.status, event.at, event.payload);
    return result.value;
  }

  create(task: NewTask): Promise<TaskRecord> {
    return this.batcher.enqueueMerged(this.creates, task);
  }

  async findIdempotencyKey(scope: { ownerKey: string; generation: TaskGeneration }, key: string): Promise<IdempotencyRecord | undefined> {
    const [row] = await this.read<IdempotencyRow>('read an idempotency key', LEDGER_SQL.findKey, [scope.ownerKey, scope.generation, key, this.clockNow()]);
    return row === undefined ? undefined : toIdempotencyRecord(row);
  }

  /**
   * See {@link LedgerStore.claimIdempotencyKey}: the unique key row settles concurrent claims of every instance. With
   * a quota, the owner's advisory lock comes first (always before a key's row lock, so two claims cannot wait on each
   * other crosswise); then a live key answers `existing`, and only a free one is counted against the quota.
   */
  claimIdempotencyKey(claim: IdempotencyClaim, task?: NewTask, quota?: CreateQuota): Promise<IdempotencyClaimResult> {
    return this.batcher.enqueue(async (tx): Promise<IdempotencyClaimResult> => {
      const scope = [claim.ownerKey, claim.generation, claim.key];
      if (task && quota) {
        await tx.query(SQL.lockOwner, [claim.ownerKey]);
        const [live] = await tx.query<IdempotencyRow>(LEDGER_SQL.findKey, [...scope, this.clockNow()]);
        if (live) return { claimed: false, existing: toIdempotencyRecord(live) };
        const refused = await this.refusalFor(tx, task, quota);
        if (refused) return { claimed: false, refused };
      }
      const won = await tx.query(LEDGER_SQL.claimKey, [...scope, claim.toolName, claim.requestDigest, claim.taskId, claim.windowMs, this.clockNow()]);
      if (won.length === 0) {
        const [row] = await tx.query<IdempotencyRow>(LEDGER_SQL.keyRow, scope);
        return { claimed: false, existing: toIdempotencyRecord(row as IdempotencyRow) };
      }
      return task === undefined ? { claimed: true } : { claimed: true, task: await this.insertOne(tx, task) };
    });
  }

  openOperation(operation: NewOperation): Promise<OperationRecord> {
    return this.batcher.enqueue(async (tx) => {
      await tx.query(LEDGER_SQL.insertOperation, newOperationValues(operation));
      const [row] = await tx.query<OperationRow>(LEDGER_SQL.operationByKey, [operation.taskId, operation.key]);
      return toOperationRecord(row as OperationRow);
    });
  }

  settleOperation(operationId: string, settlement: OperationSettlement): Promise<OperationRecord | undefined> {
    return this.batcher.enqueue(async (tx) => {
      const receipt = settlement.receipt == null ? null : JSON.stringify(settlement.receipt);
      const [row] = await tx.query<OperationRow>(LEDGER_SQL.settleOperation, [operationId, settlement.status, receipt, settlement.detail ?? null, settlement.now, settlement.from]);
      return row === undefined ? undefined : toOperationRecord(row);
    });
  }

  async getOperation(operationId: string): Promise<OperationRecord | undefined> {
    const [row] = await this.read<OperationRow>('read an operation', LEDGER_SQL.operationById, [operationId]);
    return row === undefined ? undefined : toOperationRecord(row);
  }

  async listOperations(filter: OperationFilter): Promise<OperationRecord[]> {
    const rows = await this.read<OperationRow>('list operations', LEDGER_SQL.listOperations, [filter.ownerKey ?? null, filter.taskId ?? null, filter.statuses ?? null, toLimit(filter.limit)]);
    return rows.map(toOperationRecord);
  }

  async listKillSwitches(): Promise<KillSwitchRecord[]> {
    const rows = await this.read<KillSwitchRow>('read the kill switches', `SELECT ${KILL_SWITCH_COLUMNS} FROM ${SCHEMA}.kill_switches ORDER BY scope`, []);
    return rows.map(toKillSwitchRecord);
  }

  async setKillSwitch(record: KillSwitchRecord): Promise<void> {
    await this.batcher.enqueue((tx) =>
      tx.query(
        `INSERT INTO ${SCHEMA}.kill_switches (${KILL_SWITCH_COLUMNS}) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (scope) DO UPDATE SET fallback = EXCLUDED.fallback, reason = EXCLUDED.reason, set_by = EXCLUDED.set_by, set_at = EXCLUDED.set_at`,
        killSwitchValues(record),
      ),
    );
  }

  async clearKillSwitch(scope: string): Promise<boolean> {
    const rows = await this.batcher.enqueue((tx) => tx.query(`DELETE FROM ${SCHEMA}.kill_switches WHERE scope = $1 RETURNING 1`, [scope]));
    return rows.length > 0;
  }

  async appendAudit(entries: readonly AuditEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const rows = entries.map(auditValues);
    await this.batcher.enqueue((tx) => tx.query(LEDGER_SQL.appendAudit, rows[0]!.map((_, column) => rows.map((row) => row[column]))));
  }

  async listAudit(filter: AuditFilter): Promise<AuditRecord[]> {
    const rows = await this.read<AuditRow>('read the audit log', LEDGER_SQL.listAudit, [filter.afterSeq ?? 0, filter.since ?? null, filter.tool ?? null, filter.ownerKey ?? null, toLimit(filter.limit), filter.kind ?? null]);
    return rows.map(toAuditRecord);
  }

  async purgeAudit(before: number, limit: number): Promise<number> {
    const rows = await this.batcher.enqueue((tx) => tx.query(`${LEDGER_SQL.purgeAudit} RETURNING 1`, [before, toLimit(limit)]));
    return rows.length;
  }

  async get(taskId: string, scope: TaskScope): Promise<TaskRecord | undefined> {
    const [row] = await this.read<TaskRow>('read a task', SQL.getScoped, [taskId, scope.ownerKey, scope.generation ?? null]);
    return row === undefined ? undefined : this.codec.toRecord(row);
  }

  async getUnscoped(taskId: string): Promise<TaskRecord | undefined> {
    const [row] = await this.read<TaskRow>('read a task', SQL.getUnscoped, [taskId]);
    return row === undefined ? undefined : this.codec.toRecord(row);
  }

  async getOutcome(taskId: string): Promise<TaskOutcome | undefined> {
    const [row] = await this.read<{ kind: string; body: string }>('read an outcome', SQL.getOutcome, [taskId]);
    return row === undefined ? undefined : toOutcome(row);
  }

  /** See {@link TaskStore.transition}: one statement locks the row, applies the condition and stores the outcome. */
  async transition(taskId: string, request: TransitionRequest): Promise<TaskRecord | undefined> {
    const from = checkTransition(request);
    const { outcome } = request;
    return this.batcher.enqueue(async (tx) => {
      const [row] = await tx.query<TaskRow & { from_status: TaskRecord['status'] }>(SQL.transition, [
        taskId,
        request.to,
        request.statusMessage !== undefined,
        request.statusMessage ?? null,
        request.now,
        request.releaseLease === true,
        from,
        request.leaseOwner ?? null,
        outcome?.kind ?? null,
        outcome === undefined ? null : outcomeBody(outcome),
      ]);
      if (row === undefined) return undefined;
      tx.append(taskId, 'status', request.to, request.now, { from: row.from_status, to: request.to });
      return this.codec.toRecord(row);
    });
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
    await this.batcher.enqueue(async (tx) => {
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
    const rows = await this.read<TaskRow>('list tasks', SQL.list, [scope.ownerKey, scope.generation, page.afterSeq, toLimit(page.limit)]);
    return rows.map((row) => this.codec.toRecord(row));
  }

  /** See {@link TaskStore.startAttempt}. A lease is lapsed once `leaseExpiresAt <= now` (the store's clock). */
  startAttempt(taskId: string, leaseOwner: string, leaseMs: number): Promise<TaskRecord | undefined> {
    return this.batcher.enqueue(async (tx) => {
      const [row] = await tx.query<TaskRow & { store_now: number }>(SQL.startAttempt, [taskId, leaseOwner, this.clockNow(), leaseMs]);
      if (row === undefined) return undefined;
      tx.append(taskId, 'attempt', row.status as TaskRecord['status'], row.store_now, { attempt: row.attempt, leaseOwner });
      return this.codec.toRecord(row);
    });
  }

  /** See {@link TaskStore.renewLeases}. Only non-terminal tasks; no event (renewals are invisible). */
  async renewLeases(leaseOwner: string, taskIds: readonly string[], leaseMs: number): Promise<string[]> {
    if (taskIds.length === 0) return [];
    const rows = await this.batcher.enqueue((tx) => tx.query<{ task_id: string }>(SQL.renewLeases, [leaseOwner, taskIds, this.clockNow(), leaseMs]));
    const ids = new Set(rows.map((row) => row.task_id));
    return taskIds.filter((id) => ids.has(id));
  }

  /** See {@link TaskStore.claimRunnable}: `FOR UPDATE SKIP LOCKED`, one attempt event each; ordered by `seq`. */
  async claimRunnable(leaseOwner: string, leaseMs: number, limit: number): Promise<TaskRecord[]> {
    return this.batcher.enqueue(async (tx) => {
      const rows = (await tx.query<TaskRow & { store_now: number }>(SQL.claimRunnable, [leaseOwner, leaseMs, this.clockNow(), toLimit(limit)])).sort((a, b) => a.seq - b.seq);
      for (const row of rows) tx.append(row.task_id, 'attempt', 'working', row.store_now, { attempt: row.attempt, leaseOwner });
      return rows.map((row) => this.codec.toRecord(row));
    });
  }

  /** See {@link TaskStore.claimLapsed}: `FOR UPDATE SKIP LOCKED`, no event; result ordered by `seq`. */
  async claimLapsed(leaseOwner: string, leaseMs: number, limit: number): Promise<TaskRecord[]> {
    const rows = await this.batcher.enqueue((tx) => tx.query<TaskRow>(SQL.claimLapsed, [leaseOwner, leaseMs, this.clockNow(), toLimit(limit)]));
    return rows.map((row) => this.codec.toRecord(row)).sort((a, b) => a.seq - b.seq);
  }

  /** See {@link TaskStore.requestInput}. Rejects with `invalid` (before writing) for no requests or a reused key. */
  requestInput(
    taskId: string,
    requests: Parameters<TaskStore['requestInput']>[1],
    change: Parameters<TaskStore['requestInput']>[2],
  ): Promise<TaskRecord | undefined> {
    try {
      checkInputRequests(requests);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.batcher.enqueue((tx) => parkForInput(tx, this.codec, taskId, requests, change));
  }

  async listInputRequests(taskId: string): Promise<InputRequestRecord[]> {
    return (await this.read<InputRequestRow>('list input requests', SQL.listInputRequests, [taskId])).map((row) => this.codec.toInputRequest(row));
  }

  /** See {@link TaskStore.answerInput}. A call that changes no request writes nothing. */
  answerInput(taskId: string, change: Parameters<TaskStore['answerInput']>[1]): ReturnType<TaskStore['answerInput']> {
    return this.batcher.enqueue((tx) => applyAnswers(tx, this.codec, taskId, change));
  }

  async listWaitingSince(before: number, limit: number): Promise<TaskRecord[]> {
    return (await this.read<TaskRow>('list waiting tasks', SQL.waitingSince, [before, toLimit(limit)])).map((row) => this.codec.toRecord(row));
  }

  async getStep(taskId: string, name: string): Promise<{ value: JsonValue } | undefined> {
    const [row] = await this.read<{ value: string }>('read a step', SQL.getStep, [taskId, name]);
    return row === undefined ? undefined : { value: this.codec.stepValue(taskId, name, row.value) };
  }

  /** See {@link TaskStore.putStep}. A step of a missing task is dropped. */
  async putStep(taskId: string, name: string, value: JsonValue): Promise<void> {
    const json = this.codec.stepText(taskId, name, value);
    await this.batcher.enqueue((tx) => tx.query(SQL.putStep, [taskId, name, json, this.clockNow()]));
  }

  /** See {@link TaskStore.releaseLeases}: lapsed on the store's clock, one `released` event each. */
  releaseLeases(leaseOwner: string, taskIds: readonly string[]): Promise<string[]> {
    return this.release(leaseOwner, taskIds, false);
  }

  /** See {@link TaskStore.releaseUnstarted}: not counted, runnable again, one `released` event each. */
  releaseUnstarted(leaseOwner: string, taskIds: readonly string[]): Promise<string[]> {
    return this.release(leaseOwner, taskIds, true);
  }

  private async release(leaseOwner: string, taskIds: readonly string[], unstarted: boolean): Promise<string[]> {
    if (taskIds.length === 0) return [];
    const rows = await this.batcher.enqueue(async (tx) => {
      const released = await tx.query<{ task_id: string; store_now: number }>(unstarted ? SQL.releaseUnstarted : SQL.releaseLeases, [leaseOwner, taskIds, this.clockNow()]);
      for (const row of released) tx.append(row.task_id, 'released', 'working', row.store_now, unstarted ? { leaseOwner, unstarted } : { leaseOwner });
      return released;
    });
    const ids = new Set(rows.map((row) => row.task_id));
    return taskIds.filter((id) => ids.has(id));
  }

  /** See {@link TaskStore.registerProcess}: the id's row locked while it is judged, on the database clock. */
  async registerProcess(entry: NewProcessEntry, ttlMs: number, replaceToken?: string): Promise<RegisterProcessResult> {
    const params = [entry.instanceId, entry.role, entry.token, entry.host, entry.pid, entry.settingsDigest, this.clockNow(), ttlMs];
    return this.batcher.enqueue(async (tx): Promise<RegisterProcessResult> => {
      if ((await tx.query(SQL.insertProcess, params)).length > 0) return { registered: true, previous: undefined };
      const [row] = await tx.query<ProcessRow & { store_now: number }>(SQL.lockProcess, [entry.instanceId, this.clockNow()]);
      const previous = row ? toProcess(row, row.store_now) : undefined;
      if (previous?.live && previous.token !== entry.token && previous.token !== replaceToken) return { registered: false, holder: previous };
      await tx.query(previous ? SQL.replaceProcess : SQL.insertProcess, params);
      return { registered: true, previous };
    });
  }

  async heartbeatProcess(instanceId: string, token: string, ttlMs: number): Promise<boolean> {
    const rows = await this.batcher.enqueue((tx) => tx.query(SQL.heartbeatProcess, [instanceId, token, this.clockNow(), ttlMs]));
    return rows.length > 0;
  }

  async deregisterProcess(instanceId: string, token: string): Promise<void> {
    await this.batcher.enqueue((tx) => tx.query(SQL.deleteProcess, [instanceId, token]));
  }

  async listProcesses(): Promise<ProcessRecord[]> {
    return (await this.read<ProcessRow & { store_now: number }>('list processes', SQL.listProcesses, [this.clockNow()])).map((row) => toProcess(row, row.store_now));
  }

  /** See {@link TaskStore.releaseLeasesOf}: lapsed on the database clock, one `released` event each. */
  async releaseLeasesOf(leaseOwner: string): Promise<string[]> {
    return this.batcher.enqueue((tx) => this.releaseAllOf(tx, leaseOwner));
  }

  async reapLapsedProcesses(): Promise<{ instanceIds: string[]; taskIds: string[] }> {
    return this.batcher.enqueue(async (tx) => {
      const instanceIds = (await tx.query<{ instance_id: string }>(SQL.reapProcesses, [this.clockNow()])).map((row) => row.instance_id).sort();
      const taskIds: string[] = [];
      for (const instanceId of instanceIds) taskIds.push(...(await this.releaseAllOf(tx, instanceId)));
      return { instanceIds, taskIds };
    });
  }

  private async releaseAllOf(tx: BatchTx, leaseOwner: string): Promise<string[]> {
    const rows = await tx.query<{ task_id: string; store_now: number }>(SQL.releaseLeasesOf, [leaseOwner, this.clockNow()]);
    for (const row of rows) tx.append(row.task_id, 'released', 'working', row.store_now, { leaseOwner });
    return rows.map((row) => row.task_id);
  }

  /** See {@link TaskStore.compact}: nothing to do, autovacuum reclaims dead rows on its own. */
  async compact(): Promise<void> {}

  /** See {@link TaskStore.getToolState}. */
  async getToolState(ownerKey: string, tool: string, key: string): Promise<JsonValue | undefined> {
    const [row] = await this.read<{ value: string }>('read tool state', SQL.getToolState, [ownerKey, tool, key]);
    return row === undefined ? undefined : (JSON.parse(row.value) as JsonValue);
  }

  /** See {@link TaskStore.putToolState}; the key bound is checked in the write's own statement. */
  async putToolState(ownerKey: string, tool: string, key: string, value: JsonValue, now: number): Promise<void> {
    const json = toolStateJson(tool, key, value);
    await this.batcher.enqueue(async (tx) => {
      const written = await tx.query(SQL.putToolState, [ownerKey, tool, key, json, now, MAX_TOOL_STATE_KEYS]);
      if (written.length === 0) throw tooManyToolStateKeys(MAX_TOOL_STATE_KEYS);
    });
  }

  /** See {@link TaskStore.expireDue}: judged on the store's clock; `SKIP LOCKED` between concurrent sweepers. */
  async expireDue(limit: number): Promise<string[]> {
    return this.batcher.enqueue(async (tx) => {
      const rows = await tx.query<{ task_id: string; status: TaskRecord['status']; store_now: number }>(SQL.expireDue, [this.clockNow(), toLimit(limit)]);
      for (const row of rows) tx.append(row.task_id, 'expired', row.status, row.store_now, null);
      await tx.query(SQL.pruneTombstones, [this.clockNow(), toLimit(limit), EXPIRED_EVENT_RETENTION_MS]);
      // Lapsed idempotency keys go with the same sweep (their window, not the TTL, decides).
      await tx.query(LEDGER_SQL.purgeKeys, [this.clockNow(), toLimit(limit)]);
      return rows.map((row) => row.task_id);
    });
  }

  async browse(query: TaskBrowseQuery): Promise<TaskRecord[]> {
    const rows = await this.read<TaskRow>('browse tasks', SQL.browse, [
      query.beforeSeq ?? Number.MAX_SAFE_INTEGER,
      query.ownerKey ?? null,
      query.statuses && query.statuses.length > 0 ? [...query.statuses] : null,
      query.toolName ?? null,
      query.createdFrom ?? null,
      query.createdTo ?? null,
      query.text ? query.text.toLowerCase() : null,
      toLimit(query.limit),
    ]);
    return rows.map((row) => this.codec.toRecord(row));
  }

  async listTaskEvents(taskId: string, limit: number): Promise<TaskEvent[]> {
    return (await this.read<EventRow>('read task events', SQL.taskEvents, [taskId, toLimit(limit)])).map(toEvent);
  }

  async readEventsAfter(afterSeq: number, limit: number): Promise<TaskEvent[]> {
    return (await this.read<EventRow>('read events', SQL.eventsAfter, [afterSeq, toLimit(limit)])).map(toEvent);
  }

  async lastEventSeq(): Promise<number> {
    const [row] = await this.read<{ seq: number }>('read events', SQL.lastEventSeq, []);
    return row?.seq ?? 0;
  }

  async schemaStatus(): Promise<{ applied: number; expected: number }> {
    const [row] = await this.read<{ v: number }>('read the schema version', `SELECT COALESCE(MAX(version), 0)::int AS v FROM ${SCHEMA}.schema_migrations`, []);
    return { applied: row?.v ?? 0, expected: Math.max(...POSTGRES_MIGRATIONS.map((migration) => migration.version)) };
  }

  onEvent(listener: TaskEventListener): () => void {
    return this.listeners.add(listener);
  }

  /**
   * Wake-ups for commits of any process on this database over one dedicated `LISTEN mcp_tasks_feed` connection
   * (`application_name` `<applicationName>-listen`), reconnecting with backoff; see {@link listenForCommits}.
   */
  watchCommits(wake: CommitWatcher): () => Promise<void> {
    const stop = listenForCommits(
      {
        url: this.connection.url,
        connectTimeoutMs: Math.max(1, Math.floor(this.connection.connectTimeoutMs ?? 5_000)),
        applicationName: `${this.connection.applicationName ?? 'mcp-tasks'}-listen`,
        logger: this.logger,
      },
      wake,
    );
    const unwatch = async (): Promise<void> => {
      this.watchers.delete(unwatch);
      await stop();
    };
    this.watchers.add(unwatch);
    return unwatch;
  }

  /** Commit every queued write, then close the pool. Later calls return the same promise. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all([...this.watchers].map((unwatch) => unwatch()));
      await this.batcher.drain();
      this.batcher.close();
      this.listeners.clear();
      await this.pool.end();
    })();
    return this.closing;
  }

  /** The time parameter of a statement: `null` (the database clock) unless the store has a clock of its own. */
  private clockNow(): number | null {
    return this.clock ? this.clock.now() : null;
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
        this.settleInserted(batch, group, plan.results, await this.insertRows(tx, batch));
        continue;
      }
      await tx.query(SQL.itemSavepoint);
      try {
        this.settleInserted(batch, group, plan.results, await this.insertRows(tx, batch));
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
    const candidates = createdEvents(fresh, fresh.map(() => ({ ok: true, value: undefined as unknown as TaskRecord })));
    const steps = stepRows(this.codec, fresh);
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
    ]);
    this.settleInserted(fresh, plan.fresh, plan.results, rows);
    const base = rows[0]?.feed_base ?? 0;
    const events = createdEvents(tasks, plan.results).map((event, i) => ({ seq: base + i + 1, ...event }));
    return { results: settledAll(plan.results), events };
  }

  /** Insert `tasks` and their steps; the rows the database inserted (a taken idempotency key is left out). */
  private async insertRows(tx: BatchTx, tasks: readonly NewTask[]): Promise<InsertedRow[]> {
    if (tasks.length === 0) return [];
    const rows = await tx.query<InsertedRow>(SQL.insertTasks, this.taskColumns(tasks));
    const inserted = new Set(rows.map((row) => row.task_id));
    const steps = stepRows(this.codec, tasks.filter((task) => inserted.has(task.taskId)));
    if (steps.length > 0) {
      await tx.query(SQL.insertSteps, [steps.map((s) => s[0]), steps.map((s) => s[1]), steps.map((s) => s[2]), steps.map((s) => s[3])]);
    }
    return rows;
  }

  /** Parameters `$1…$19` of the multi-row task INSERT. */
  private taskColumns(tasks: readonly NewTask[]): unknown[] {
    const params = tasks.map((task) => this.paramsOf(task));
    const column = (name: string) => params.map((p) => p[name] ?? null);
    return [
      this.clockNow(),
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
    ];
  }

  /** Record the created task for every inserted row, and a conflict for every create the database skipped. */
  private settleInserted(tasks: readonly NewTask[], indexes: readonly number[], results: Array<Settled<TaskRecord> | undefined>, rows: readonly InsertedRow[]): void {
    const byId = new Map(rows.map((row) => [row.task_id, row]));
    tasks.forEach((task, k) => {
      const row = byId.get(task.taskId);
      // Exactly what the INSERT wrote, plus the seq and lease end only the database knew.
      const record = row && this.codec.insertedRecord(task, { ...this.paramsOf(task), leaseExpiresAt: row.lease_expires_at }, row.seq);
      results[indexes[k] as number] = record ? { ok: true, value: record } : { ok: false, error: idempotencyKeyTaken() };
    });
  }

  private paramsOf(task: NewTask): ReturnType<RowCodec['newTaskParams']> {
    let params = this.params.get(task);
    if (!params) this.params.set(task, (params = this.codec.newTaskParams(task, 0)));
    return params;
  }

  private async read<R extends pg.QueryResultRow>(action: string, sql: string, params: readonly unknown[]): Promise<R[]> {
    if (this.closing) throw new StoreError('fault', `Task store failed to ${action}: store is closed`);
    try {
      return (await this.pool.query<R>(sql, params as unknown[])).rows;
    } catch (error) {
      throw toStoreError(error, action);
    }
  }

}

/**
 * Open a PostgreSQL task store: a pool on `options.url`, the schema migrated under an advisory lock.
 * @throws {StoreError} `unavailable` when the server cannot be reached within the connect timeout,
 *   `schema_mismatch` when the database holds a schema version this code does not know, `fault` otherwise.
 */
export function openPostgresTaskStore(options: PostgresTaskStoreOptions): Promise<PostgresTaskStore> {
  return PostgresTaskStore.open(options);
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

/** `[taskId, name, value JSON, createdAt]` for every journaled step of `tasks`. */
function stepRows(codec: RowCodec, tasks: readonly NewTask[]): Array<readonly [string, string, string, number]> {
  return tasks.flatMap((task) => Object.entries(task.steps ?? {}).map(([name, value]) => [task.taskId, name, codec.stepText(task.taskId, name, value), task.createdAt] as const));
}

function settledAll(results: ReadonlyArray<Settled<TaskRecord> | undefined>): Array<Settled<TaskRecord>> {
  return results.map((result) => result ?? { ok: false, error: new StoreError('fault', 'Task store failed to write: create not settled') });
}
