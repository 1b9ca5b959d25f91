import type Database from 'better-sqlite3';
import { systemClock, type Clock } from '../../core/clock.js';
import type { NewProcessEntry, ProcessRecord, RegisterProcessResult } from '../../core/process-record.js';
import { toProcess, type ProcessRow } from '../process-row.js';
import { silentLogger, type Logger } from '../../core/logger.js';
import { checkInputRequests, checkResultChunks, checkTransition, EXPIRED_EVENT_RETENTION_MS, idempotencyKeyTaken, toLimit, toolStateJson, tooManyToolStateKeys, quotaRefusal } from '../../core/store-rules.js';
import { TaskEventListeners } from '../../core/task-event-listeners.js';
import { MAX_TOOL_STATE_KEYS, type CreateAdmission, type CreateQuota, type QuotaRefusal, type TaskBrowseQuery, type TaskEvent, type TaskEventListener, type TaskScope, type TaskStore, type TransitionRequest } from '../../core/store.js';
import type {
  InputRequestRecord,
  JsonObject,
  JsonValue,
  NewTask,
  TaskGeneration,
  TaskOutcome,
  TaskRecord,
} from '../../core/task.js';
import { outcomeBody, RowCodec, toEvent, toOutcome } from '../codec.js';
import type { FieldCipher } from '../field-cipher.js';
import { openConnection, readPragmas, type SqlitePragmas } from './connection.js';
import { createdEventPayload, type ServerSecretStore, type SessionStore } from '../../core/session-store.js';
import { serverSecretTable, sessionTable, type SessionQuery } from '../session-table.js';
import { GroupCommitter, storageFault, type GroupCommitStats } from './group-commit.js';
import {
  applyAnswers,
  parkForInput,
  type AnswerInputChange,
  type AnswerInputResult,
  type BatchWriter,
  type NewInputRequest,
  type RequestInputChange,
} from './input-requests.js';
import { migrate, MIGRATIONS } from './migrations.js';
import { LEDGER_SQL } from './ledger-sql.js';
import type { KillSwitchRecord } from '../../core/kill-switch.js';
import { KILL_SWITCH_COLUMNS, killSwitchValues, toKillSwitchRecord, type KillSwitchRow } from '../kill-switch-codec.js';
import type { AuditEntry, AuditFilter, AuditRecord, IdempotencyClaim, IdempotencyClaimResult, IdempotencyRecord, NewOperation, OperationFilter, OperationRecord, OperationSettlement } from '../../core/ledger.js';
import { auditValues, newOperationValues, toAuditRecord, toIdempotencyRecord, toOperationRecord, type AuditRow, type IdempotencyRow, type OperationRow } from '../ledger-codec.js';
import { SQL, type EventRow, type InputRequestRow, type Statements, type TaskRow } from './sql.js';

/** Free pages one {@link SqliteTaskStore.compact} returns to the file system (4 MiB at the default page size). */
const VACUUM_PAGES = 1024;



/** Options of {@link openSqliteTaskStore}. */
export interface SqliteTaskStoreOptions {
  /** Database file; parent directories are created. Must be a real file (WAL needs one). */
  path: string;
  logger?: Logger;
  /**
   * The store's clock: judges leases (`startAttempt`, `renewLeases`, `claimLapsed`, a created task's lease) and the
   * expiry sweep (`expireDue`), and stamps journaled steps and migrations. Default: wall clock. Tests pass the
   * fake clock their runtime uses.
   */
  clock?: Clock;
  /** How long a writer waits for another process's lock, in ms. Default 5000. */
  busyTimeoutMs?: number;
  /** Most writes per group commit; a full batch flushes at once. Default 256. */
  maxBatchSize?: number;
  /**
   * Encrypts tool arguments, input requests and answers and journaled steps at rest (`AesGcmFieldCipher`).
   * Default: none (plaintext; encrypted rows are then refused with a `fault` naming their key id).
   */
  encryption?: FieldCipher;
}

/**
 * The durable {@link TaskStore} on one SQLite file (better-sqlite3, WAL, `synchronous=FULL`).
 *
 * Writes go through a {@link GroupCommitter}: concurrent writes share one transaction and every promise
 * resolves only after that transaction committed. Reads are synchronous statements on the same connection
 * and therefore only ever see committed state. Several stores (processes) may open one file; SQLite's write
 * lock serialises their batches and the conditional statements in `sql.ts` settle their races.
 *
 * Errors: a {@link StoreError} — `fault` for storage faults (driver error as `cause`), `unavailable` when another
 * process held the write lock past `busyTimeoutMs`, `conflict` for an idempotency key already taken, `invalid` for
 * a broken precondition of the port.
 */
export class SqliteTaskStore implements TaskStore {
  /** Schema versions this instance applied when it opened (empty when another opener already had). */
  readonly appliedMigrations: readonly number[];
  private readonly stmt: Statements;
  private readonly ledger: Record<keyof typeof LEDGER_SQL, Database.Statement>;
  private readonly committer: GroupCommitter;
  private readonly listeners: TaskEventListeners;
  private closing: Promise<void> | undefined;
  /** v1 sessions on this file (see {@link SessionStore}); single statements outside the group commit. */
  readonly sessions: SessionStore;
  /** The server-secret record of this file (see {@link ServerSecretStore}). */
  readonly serverSecret: ServerSecretStore;

  private constructor(
    private readonly db: Database.Database,
    private readonly clock: Clock,
    private readonly logger: Logger,
    appliedMigrations: number[],
    maxBatchSize: number,
    private readonly codec: RowCodec,
  ) {
    this.appliedMigrations = Object.freeze(appliedMigrations);
    this.stmt = Object.fromEntries(
      Object.entries(SQL).map(([name, sql]) => [name, db.prepare(sql)]),
    ) as Statements;
    this.ledger = Object.fromEntries(Object.entries(LEDGER_SQL).map(([name, sql]) => [name, db.prepare(sql)])) as Record<keyof typeof LEDGER_SQL, Database.Statement>;
    this.listeners = new TaskEventListeners(logger);
    this.committer = new GroupCommitter(db, maxBatchSize, (events) => this.listeners.publish(events), logger);
    const statements = new Map<string, Database.Statement>();
    const query: SessionQuery = (action, sql, params) => {
      try {
        if (this.closing) throw new Error('store is closed');
        let statement = statements.get(sql);
        if (!statement) statements.set(sql, (statement = db.prepare(sql)));
        return Promise.resolve(statement.reader ? (statement.all(...params) as Array<Record<string, unknown>>) : (statement.run(...params), []));
      } catch (error) {
        return Promise.reject(storageFault(error, action));
      }
    };
    this.sessions = sessionTable(query, 'sessions', () => '?', { tasks: 'tasks', events: 'task_events', payloadSessionId: "json_extract(e.payload, '$.sessionId')" });
    this.serverSecret = serverSecretTable(query, 'server_secret', () => '?');
  }

  /** See {@link openSqliteTaskStore}. */
  static open(options: SqliteTaskStoreOptions): SqliteTaskStore {
    const logger = (options.logger ?? silentLogger).child({ component: 'sqlite-task-store' });
    const clock = options.clock ?? systemClock;
    let db: Database.Database | undefined;
    try {
      db = openConnection(options.path, Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000)));
      const applied = migrate(db, clock.now());
      if (applied.length > 0) logger.info({ versions: applied }, 'task store schema migrated');
      if (Number(db.pragma('auto_vacuum', { simple: true })) === 0) {
        logger.info({ path: options.path }, 'this store file was created without auto_vacuum: deleted tasks free pages for reuse, but the file never shrinks (see docs/operations/retention.md)');
      }
      return new SqliteTaskStore(db, clock, logger, applied, Math.max(1, options.maxBatchSize ?? 256), new RowCodec(options.encryption));
    } catch (error) {
      db?.close();
      throw storageFault(error, 'open');
    }
  }

  /** Connection settings as reported by SQLite (tests assert `wal` / `2`). */
  pragmas(): SqlitePragmas {
    return readPragmas(this.db);
  }

  /** Group-commit counters: `commits` = write transactions committed, `operations` = writes they carried. */
  stats(): GroupCommitStats {
    return { ...this.committer.stats };
  }

  /** See {@link TaskStore.admitCreate}: one write transaction of the group commit (the SQLite write lock). */
  admitCreate(task: NewTask, quota: CreateQuota): Promise<CreateAdmission> {
    return this.committer.enqueue((events): CreateAdmission => {
      const refused = this.refusalFor(task, quota);
      if (refused) return { admitted: false, ...refused };
      return { admitted: true, task: this.insertCreated(events, task) };
    });
  }

  /**
   * Under the write lock: which quota refuses `task` (nothing written), or `undefined` after recording its create
   * for the window (the caller inserts the task in the same transaction).
   */
  private refusalFor(task: NewTask, quota: CreateQuota): QuotaRefusal | undefined {
    const { ownerKey, createdAt } = task;
    this.stmt.pruneAdmissions.run({ cutoff: createdAt - quota.windowMs });
    const refused = quotaRefusal(quota, createdAt, {
      ...(quota.maxCreates === null ? {} : { window: this.stmt.windowAdmissions.get({ ownerKey }) as { count: number; oldest: number | null } }),
      ...(quota.maxActive === null ? {} : { active: (this.stmt.activeOfOwner.get({ ownerKey, now: this.clock.now() }) as { count: number }).count }),
    });
    if (!refused) this.stmt.recordAdmission.run({ taskId: task.taskId, ownerKey, now: createdAt });
    return refused;
  }

  /** See {@link TaskStore.putResultChunks}: one write transaction of the group commit. */
  async putResultChunks(taskId: string, chunks: readonly Uint8Array[]): Promise<boolean> {
    checkResultChunks(chunks);
    return this.committer.enqueue(() => {
      if (!this.stmt.taskExists.get({ taskId })) return false;
      this.stmt.deleteResultChunks.run({ taskId });
      chunks.forEach((chunk, index) => this.stmt.insertResultChunk.run({ taskId, index, data: chunk }));
      return true;
    });
  }

  /** See {@link TaskStore.readResultChunk}. */
  async readResultChunk(taskId: string, index: number): Promise<Uint8Array | undefined> {
    const row = this.read('read a result chunk', () => this.stmt.readResultChunk.get({ taskId, index }) as { data: Buffer } | undefined);
    return row?.data;
  }

  create(task: NewTask): Promise<TaskRecord> {
    return this.committer.enqueue((events) => this.insertCreated(events, task));
  }

  /** Insert a new task as {@link create} does (refusing a taken legacy idempotency key), inside a write transaction. */
  private insertCreated(events: TaskEvent[], task: NewTask): TaskRecord {
    const idempotencyKey = task.idempotencyKey ?? null;
    if (idempotencyKey !== null && this.stmt.idempotencyTaken.get({ ownerKey: task.ownerKey, idempotencyKey })) {
      throw idempotencyKeyTaken();
    }
    return this.insertNewTask(events, task);
  }

  async findIdempotencyKey(scope: { ownerKey: string; generation: TaskGeneration }, key: string): Promise<IdempotencyRecord | undefined> {
    const row = this.read('read an idempotency key', () => this.ledger.findKey.get({ ...scope, key, now: this.clock.now() }));
    return row === undefined ? undefined : toIdempotencyRecord(row as IdempotencyRow);
  }

  /** See {@link LedgerStore.claimIdempotencyKey}: SQLite's write lock serialises claims of every process. */
  claimIdempotencyKey(claim: IdempotencyClaim, task?: NewTask, quota?: CreateQuota): Promise<IdempotencyClaimResult> {
    return this.committer.enqueue((events): IdempotencyClaimResult => {
      const now = this.clock.now();
      const scope = { ownerKey: claim.ownerKey, generation: claim.generation, key: claim.key, now };
      this.ledger.deleteLapsedKey.run(scope);
      const taken = this.ledger.findKey.get(scope) as IdempotencyRow | undefined;
      if (taken) return { claimed: false, existing: toIdempotencyRecord(taken) };
      // The key is free: the quota decides whether this call creates anything (a taken key replays whatever the quota).
      const refused = task && quota ? this.refusalFor(task, quota) : undefined;
      if (refused) return { claimed: false, refused };
      const { changes } = this.ledger.insertKey.run({ ...scope, toolName: claim.toolName, requestDigest: claim.requestDigest, taskId: claim.taskId, windowMs: claim.windowMs });
      if (changes === 0) return { claimed: false, existing: toIdempotencyRecord(this.ledger.findKey.get(scope) as IdempotencyRow) };
      return task === undefined ? { claimed: true } : { claimed: true, task: this.insertNewTask(events, task) };
    });
  }

  openOperation(operation: NewOperation): Promise<OperationRecord> {
    return this.committer.enqueue(() => {
      this.ledger.insertOperation.run(...newOperationValues(operation));
      return toOperationRecord(this.ledger.operationByKey.get({ taskId: operation.taskId, key: operation.key }) as OperationRow);
    });
  }

  settleOperation(operationId: string, settlement: OperationSettlement): Promise<OperationRecord | undefined> {
    return this.committer.enqueue(() => {
      const row = this.ledger.settleOperation.get({
        operationId,
        status: settlement.status,
        receipt: settlement.receipt == null ? null : JSON.stringify(settlement.receipt),
        detail: settlement.detail ?? null,
        now: settlement.now,
        from: JSON.stringify(settlement.from),
      });
      return row === undefined ? undefined : toOperationRecord(row as OperationRow);
    });
  }

  async getOperation(operationId: string): Promise<OperationRecord | undefined> {
    const row = this.read('read an operation', () => this.ledger.operationById.get({ operationId }));
    return row === undefined ? undefined : toOperationRecord(row as OperationRow);
  }

  async listOperations(filter: OperationFilter): Promise<OperationRecord[]> {
    const rows = this.read('list operations', () =>
      this.ledger.listOperations.all({
        ownerKey: filter.ownerKey ?? null,
        taskId: filter.taskId ?? null,
        statuses: filter.statuses === undefined ? null : JSON.stringify(filter.statuses),
        limit: toLimit(filter.limit),
      }),
    );
    return (rows as OperationRow[]).map(toOperationRecord);
  }

  async listKillSwitches(): Promise<KillSwitchRecord[]> {
    const rows = this.read('read the kill switches', () => this.db.prepare(`SELECT ${KILL_SWITCH_COLUMNS} FROM kill_switches ORDER BY scope`).all());
    return (rows as KillSwitchRow[]).map(toKillSwitchRecord);
  }

  setKillSwitch(record: KillSwitchRecord): Promise<void> {
    return this.committer.enqueue(() => {
      this.db.prepare(`INSERT OR REPLACE INTO kill_switches (${KILL_SWITCH_COLUMNS}) VALUES (?, ?, ?, ?, ?)`).run(...killSwitchValues(record));
    });
  }

  clearKillSwitch(scope: string): Promise<boolean> {
    return this.committer.enqueue(() => this.db.prepare('DELETE FROM kill_switches WHERE scope = ?').run(scope).changes > 0);
  }

  appendAudit(entries: readonly AuditEntry[]): Promise<void> {
    if (entries.length === 0) return Promise.resolve();
    return this.committer.enqueue(() => {
      for (const entry of entries) this.ledger.appendAudit.run(...auditValues(entry));
    });
  }

  async listAudit(filter: AuditFilter): Promise<AuditRecord[]> {
    const rows = this.read('read the audit log', () =>
      this.ledger.listAudit.all({ afterSeq: filter.afterSeq ?? 0, since: filter.since ?? null, tool: filter.tool ?? null, ownerKey: filter.ownerKey ?? null, kind: filter.kind ?? null, limit: toLimit(filter.limit) }),
    );
    return (rows as AuditRow[]).map(toAuditRecord);
  }

  purgeAudit(before: number, limit: number): Promise<number> {
    return this.committer.enqueue(() => this.ledger.purgeAudit.run({ before, limit: toLimit(limit) }).changes);
  }

  /** Insert a task row, its events and steps inside the current batch (see {@link create}). */
  private insertNewTask(events: TaskEvent[], task: NewTask): TaskRecord {
    // The created event comes first because its seq becomes the task's seq (see SQL.insertTask).
    const { seq } = this.append(events, task.taskId, 'created', 'working', task.createdAt, createdEventPayload(task));
    const params = this.codec.newTaskParams(task, this.clock.now());
    this.stmt.insertTask.run({ ...params, seq });
    const record = this.codec.insertedRecord(task, params, seq);
    if (task.startNow === true) this.append(events, task.taskId, 'attempt', 'working', task.createdAt, { attempt: 1, leaseOwner: task.leaseOwner });
    // Same savepoint as the row: input gathered before the task exists is never lost or half-written.
    for (const [name, value] of Object.entries(task.steps ?? {})) {
      this.stmt.insertStep.run({ taskId: task.taskId, name, value: this.codec.stepText(task.taskId, name, value), now: task.createdAt });
    }
    return record;
  }

  async get(taskId: string, scope: TaskScope): Promise<TaskRecord | undefined> {
    const row = this.read('read a task', () => this.stmt.getScoped.get({ taskId, ownerKey: scope.ownerKey, generation: scope.generation ?? null }));
    return row === undefined ? undefined : this.codec.toRecord(row as TaskRow);
  }

  async getUnscoped(taskId: string): Promise<TaskRecord | undefined> {
    const row = this.read('read a task', () => this.stmt.getUnscoped.get({ taskId }));
    return row === undefined ? undefined : this.codec.toRecord(row as TaskRow);
  }

  async getOutcome(taskId: string): Promise<TaskOutcome | undefined> {
    const row = this.read('read an outcome', () => this.stmt.getOutcome.get({ taskId })) as { kind: string; body: string } | undefined;
    return row === undefined ? undefined : toOutcome(row);
  }

  /**
   * See {@link TaskStore.transition}. `from` is intersected with the state machine's sources of `to`, so a
   * terminal status never changes even when a caller lists it. Rejects with `invalid` (before writing) when
   * the outcome does not fit `to` (see `checkOutcome`).
   */
  async transition(taskId: string, request: TransitionRequest): Promise<TaskRecord | undefined> {
    const from = checkTransition(request);
    return this.committer.enqueue((events) => {
      // Inside the write transaction nobody else can change the row, so this is exactly the status replaced.
      const current = this.stmt.currentStatus.get({ taskId }) as { status: TaskRecord['status'] } | undefined;
      if (current === undefined) return undefined;
      const row = this.stmt.transition.get({
        taskId,
        to: request.to,
        from: JSON.stringify(from),
        setMessage: request.statusMessage === undefined ? 0 : 1,
        statusMessage: request.statusMessage ?? null,
        releaseLease: request.releaseLease === true ? 1 : 0,
        leaseOwner: request.leaseOwner ?? null,
        now: request.now,
      }) as TaskRow | undefined;
      if (row === undefined) return undefined;
      if (request.outcome !== undefined) {
        this.stmt.insertOutcome.run({ taskId, kind: request.outcome.kind, body: outcomeBody(request.outcome) });
      }
      this.append(events, taskId, 'status', request.to, request.now, { from: current.status, to: request.to });
      return this.codec.toRecord(row);
    });
  }

  async writeStatusMessages(
    entries: ReadonlyArray<{ taskId: string; statusMessage: string | null; now: number }>,
  ): Promise<void> {
    if (entries.length === 0) return;
    await this.committer.enqueue((events) => {
      for (const { taskId, statusMessage, now } of entries) {
        const row = this.stmt.writeMessage.get({ taskId, statusMessage, now }) as { status: TaskRecord['status'] } | undefined;
        if (row !== undefined) this.append(events, taskId, 'message', row.status, now, { statusMessage });
      }
    });
  }

  async list(
    scope: TaskScope & { generation: TaskGeneration },
    page: { afterSeq: number; limit: number },
  ): Promise<TaskRecord[]> {
    const rows = this.read('list tasks', () =>
      this.stmt.list.all({
        ownerKey: scope.ownerKey,
        generation: scope.generation,
        afterSeq: page.afterSeq,
        limit: toLimit(page.limit),
      }),
    );
    return (rows as TaskRow[]).map((row) => this.codec.toRecord(row));
  }

  /** See {@link TaskStore.startAttempt}. A lease is lapsed once `leaseExpiresAt <= now` (the store's clock). */
  startAttempt(taskId: string, leaseOwner: string, leaseMs: number): Promise<TaskRecord | undefined> {
    return this.committer.enqueue((events) => {
      const now = this.clock.now();
      const row = this.stmt.startAttempt.get({ taskId, leaseOwner, leaseExpiresAt: now + leaseMs, now }) as TaskRow | undefined;
      if (row === undefined) return undefined;
      this.append(events, taskId, 'attempt', row.status as TaskRecord['status'], now, { attempt: row.attempt, leaseOwner });
      return this.codec.toRecord(row);
    });
  }

  /** See {@link TaskStore.claimRunnable}: one `UPDATE … RETURNING` in the write transaction, plus the attempt events. */
  async claimRunnable(leaseOwner: string, leaseMs: number, limit: number): Promise<TaskRecord[]> {
    return this.committer.enqueue((events) => {
      const now = this.clock.now();
      const rows = (this.stmt.claimRunnable.all({ leaseOwner, now, leaseExpiresAt: now + leaseMs, limit: toLimit(limit) }) as TaskRow[]).sort((a, b) => a.seq - b.seq);
      for (const row of rows) this.append(events, row.task_id, 'attempt', 'working', now, { attempt: row.attempt, leaseOwner });
      return rows.map((row) => this.codec.toRecord(row));
    });
  }

  /** See {@link TaskStore.renewLeases}. Only non-terminal tasks; no event (renewals are invisible). */
  async renewLeases(leaseOwner: string, taskIds: readonly string[], leaseMs: number): Promise<string[]> {
    if (taskIds.length === 0) return [];
    const renewed = await this.committer.enqueue(
      () =>
        this.stmt.renewLeases.all({ leaseOwner, taskIds: JSON.stringify(taskIds), leaseExpiresAt: this.clock.now() + leaseMs }) as Array<{
          task_id: string;
        }>,
    );
    const ids = new Set(renewed.map((row) => row.task_id));
    return taskIds.filter((id) => ids.has(id));
  }

  /**
   * See {@link TaskStore.claimLapsed}. One `UPDATE … RETURNING` inside the write transaction, so concurrent
   * claimers (in any process) get disjoint sets. Skips tasks already past their TTL; appends no event (a claim
   * is followed by `startAttempt`, which does). Result ordered by `seq`.
   */
  async claimLapsed(leaseOwner: string, leaseMs: number, limit: number): Promise<TaskRecord[]> {
    const rows = await this.committer.enqueue(() => {
      const now = this.clock.now();
      return this.stmt.claimLapsed.all({ leaseOwner, now, leaseExpiresAt: now + leaseMs, limit: toLimit(limit) }) as TaskRow[];
    });
    return rows.map((row) => this.codec.toRecord(row)).sort((a, b) => a.seq - b.seq);
  }

  /**
   * See {@link TaskStore.requestInput}. Rejects with `invalid` before writing when `requests` is empty (such a task
   * could never resume), and with `invalid` and nothing written when a key was already used by the task.
   */
  requestInput(taskId: string, requests: readonly NewInputRequest[], change: RequestInputChange): Promise<TaskRecord | undefined> {
    try {
      checkInputRequests(requests);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.committer.enqueue((events) => parkForInput(this.writer(events), taskId, requests, change));
  }

  async listInputRequests(taskId: string): Promise<InputRequestRecord[]> {
    const rows = this.read('list input requests', () => this.stmt.listInputRequests.all({ taskId }));
    return (rows as InputRequestRow[]).map((row) => this.codec.toInputRequest(row));
  }

  /**
   * See {@link TaskStore.answerInput}. A task past its TTL counts as not waiting. A call that changes no request
   * writes nothing (not even `statusMessage`). Rejects with `invalid` and nothing written when an added key was
   * already used by the task.
   */
  answerInput(taskId: string, change: AnswerInputChange): Promise<AnswerInputResult> {
    return this.committer.enqueue((events) => applyAnswers(this.writer(events), taskId, change));
  }

  /**
   * See {@link TaskStore.listWaitingSince}. Oldest `lastUpdatedAt` first (ties by `seq`). Expiry is judged at
   * `before`, the only time the port passes (see `SQL.waitingSince`).
   */
  async listWaitingSince(before: number, limit: number): Promise<TaskRecord[]> {
    const rows = this.read('list waiting tasks', () => this.stmt.waitingSince.all({ before, limit: toLimit(limit) }));
    return (rows as TaskRow[]).map((row) => this.codec.toRecord(row));
  }

  async getStep(taskId: string, name: string): Promise<{ value: JsonValue } | undefined> {
    const row = this.read('read a step', () => this.stmt.getStep.get({ taskId, name })) as { value: string } | undefined;
    return row === undefined ? undefined : { value: this.codec.stepValue(taskId, name, row.value) };
  }

  /** See {@link TaskStore.putStep}. A step of a missing task is dropped. */
  async putStep(taskId: string, name: string, value: JsonValue): Promise<void> {
    const json = this.codec.stepText(taskId, name, value);
    const now = this.clock.now();
    await this.committer.enqueue(() => this.stmt.putStep.run({ taskId, name, value: json, now }));
  }

  /** See {@link TaskStore.releaseLeases}: lapsed at the store clock's now, one `released` event each. */
  releaseLeases(leaseOwner: string, taskIds: readonly string[]): Promise<string[]> {
    return this.release(leaseOwner, taskIds, false);
  }

  /** See {@link TaskStore.releaseUnstarted}: not counted, runnable again, one `released` event each. */
  releaseUnstarted(leaseOwner: string, taskIds: readonly string[]): Promise<string[]> {
    return this.release(leaseOwner, taskIds, true);
  }

  private async release(leaseOwner: string, taskIds: readonly string[], unstarted: boolean): Promise<string[]> {
    if (taskIds.length === 0) return [];
    const released = await this.committer.enqueue((events) => {
      const now = this.clock.now();
      const params = { leaseOwner, taskIds: JSON.stringify(taskIds) };
      const rows = (unstarted ? this.stmt.releaseUnstarted.all(params) : this.stmt.releaseLeases.all({ ...params, now })) as Array<{ task_id: string }>;
      for (const row of rows) this.append(events, row.task_id, 'released', 'working', now, unstarted ? { leaseOwner, unstarted } : { leaseOwner });
      return new Set(rows.map((row) => row.task_id));
    });
    return taskIds.filter((id) => released.has(id));
  }

  /** See {@link TaskStore.registerProcess}: judged and written in one transaction at the store clock's now. */
  async registerProcess(entry: NewProcessEntry, ttlMs: number, replaceToken?: string): Promise<RegisterProcessResult> {
    return this.committer.enqueue(() => {
      const now = this.clock.now();
      const row = this.stmt.getProcess.get({ instanceId: entry.instanceId }) as ProcessRow | undefined;
      const previous = row ? toProcess(row, now) : undefined;
      if (previous?.live && previous.token !== entry.token && previous.token !== replaceToken) return { registered: false, holder: previous };
      this.stmt.upsertProcess.run({ ...entry, now, ttlMs });
      return { registered: true, previous };
    });
  }

  async heartbeatProcess(instanceId: string, token: string, ttlMs: number): Promise<boolean> {
    return this.committer.enqueue(() => this.stmt.heartbeatProcess.run({ instanceId, token, ttlMs, now: this.clock.now() }).changes > 0);
  }

  async deregisterProcess(instanceId: string, token: string): Promise<void> {
    await this.committer.enqueue(() => this.stmt.deleteProcess.run({ instanceId, token }));
  }

  async listProcesses(): Promise<ProcessRecord[]> {
    const now = this.clock.now();
    return (this.stmt.listProcesses.all() as ProcessRow[]).map((row) => toProcess(row, now));
  }

  /** See {@link TaskStore.releaseLeasesOf}: lapsed at the store clock's now, one `released` event each. */
  async releaseLeasesOf(leaseOwner: string): Promise<string[]> {
    return this.committer.enqueue((events) => this.releaseAllOf(events, leaseOwner, this.clock.now()));
  }

  async reapLapsedProcesses(): Promise<{ instanceIds: string[]; taskIds: string[] }> {
    return this.committer.enqueue((events) => {
      const now = this.clock.now();
      const instanceIds = (this.stmt.lapsedProcesses.all({ now }) as Array<{ instance_id: string }>).map((row) => row.instance_id);
      const taskIds: string[] = [];
      for (const instanceId of instanceIds) {
        taskIds.push(...this.releaseAllOf(events, instanceId, now));
        this.stmt.deleteLapsedProcess.run({ instanceId, now });
      }
      return { instanceIds, taskIds };
    });
  }

  private releaseAllOf(events: TaskEvent[], leaseOwner: string, now: number): string[] {
    const rows = this.stmt.releaseLeasesOf.all({ leaseOwner, now }) as Array<{ task_id: string }>;
    for (const row of rows) this.append(events, row.task_id, 'released', 'working', now, { leaseOwner });
    return rows.map((row) => row.task_id);
  }

  /** See {@link TaskStore.compact}: up to {@link VACUUM_PAGES} free pages back to the file system per call. */
  async compact(): Promise<void> {
    await this.committer.enqueue(() => this.db.pragma(`incremental_vacuum(${VACUUM_PAGES})`));
  }

  /** See {@link TaskStore.getToolState}. */
  async getToolState(ownerKey: string, tool: string, key: string): Promise<JsonValue | undefined> {
    const row = this.read('read tool state', () => this.stmt.getToolState.get({ ownerKey, tool, key })) as { value: string } | undefined;
    return row === undefined ? undefined : (JSON.parse(row.value) as JsonValue);
  }

  /** See {@link TaskStore.putToolState}; the key bound is checked in the write's transaction. */
  async putToolState(ownerKey: string, tool: string, key: string, value: JsonValue, now: number): Promise<void> {
    const json = toolStateJson(tool, key, value);
    await this.committer.enqueue(() => {
      const { changes } = this.stmt.putToolState.run({ ownerKey, tool, key, value: json, now, maxKeys: MAX_TOOL_STATE_KEYS });
      if (changes === 0) throw tooManyToolStateKeys(MAX_TOOL_STATE_KEYS);
    });
  }

  /** See {@link TaskStore.expireDue}: judged at the store clock's now. */
  async expireDue(limit: number): Promise<string[]> {
    return this.committer.enqueue((events) => {
      const now = this.clock.now();
      const due = this.stmt.dueForExpiry.all({ now, limit: toLimit(limit) }) as Array<{ task_id: string; status: string }>;
      for (const { task_id: taskId, status } of due) {
        this.append(events, taskId, 'expired', status as TaskRecord['status'], now, null);
        this.stmt.deleteTask.run({ taskId });
        this.stmt.deleteTaskEvents.run({ taskId });
      }
      this.stmt.pruneTombstones.run({ cutoff: now - EXPIRED_EVENT_RETENTION_MS, limit: toLimit(limit) });
      // Lapsed idempotency keys go with the same sweep (their window, not the TTL, decides).
      this.ledger.purgeKeys.run({ now, limit: toLimit(limit) });
      return due.map((row) => row.task_id);
    });
  }

  async browse(query: TaskBrowseQuery): Promise<TaskRecord[]> {
    const rows = this.read('browse tasks', () =>
      this.stmt.browse.all({
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
    return (rows as TaskRow[]).map((row) => this.codec.toRecord(row));
  }

  async listTaskEvents(taskId: string, limit: number): Promise<TaskEvent[]> {
    const rows = this.read('read task events', () => this.stmt.taskEvents.all({ taskId, limit: toLimit(limit) }));
    return (rows as EventRow[]).map(toEvent);
  }

  async readEventsAfter(afterSeq: number, limit: number): Promise<TaskEvent[]> {
    const rows = this.read('read events', () => this.stmt.eventsAfter.all({ afterSeq, limit: toLimit(limit) }));
    return (rows as EventRow[]).map(toEvent);
  }

  async lastEventSeq(): Promise<number> {
    return (this.read('read events', () => this.stmt.lastEventSeq.get()) as { seq: number }).seq;
  }

  async schemaStatus(): Promise<{ applied: number; expected: number }> {
    const row = this.read('read the schema version', () => this.db.prepare('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations').get()) as { v: number };
    return { applied: row.v, expected: Math.max(...MIGRATIONS.map((migration) => migration.version)) };
  }

  onEvent(listener: TaskEventListener): () => void {
    return this.listeners.add(listener);
  }

  /** Commit every queued write, then close the connection. Later calls return the same promise. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      // Called from an event listener, the current batch is still on the stack: let it finish first.
      while (this.committer.busy) await new Promise((resolve) => setImmediate(resolve));
      this.committer.drain();
      this.committer.close();
      this.listeners.clear();
      this.db.close();
    })();
    return this.closing;
  }

  /** Insert one `task_events` row inside the current batch and collect it for publication after COMMIT. */
  private append(
    events: TaskEvent[],
    taskId: string,
    kind: TaskEvent['kind'],
    status: TaskEvent['status'],
    at: number,
    payload: JsonObject | null,
  ): TaskEvent {
    const row = this.stmt.appendEvent.get({
      taskId,
      kind,
      status,
      at,
      payload: payload === null ? null : JSON.stringify(payload),
    }) as { seq: number };
    const event: TaskEvent = { seq: row.seq, taskId, kind, status, at, payload };
    events.push(event);
    return event;
  }

  /** The current operation's view of the batch, for the functions in `input-requests.ts`. */
  private writer(events: TaskEvent[]): BatchWriter {
    return {
      stmt: this.stmt,
      codec: this.codec,
      append: (taskId, kind, status, at, payload) => {
        this.append(events, taskId, kind, status, at, payload);
      },
    };
  }

  private read<T>(action: string, run: () => T): T {
    try {
      return run();
    } catch (error) {
      throw storageFault(error, action);
    }
  }

}

/**
 * Open (creating if needed) a SQLite task store: WAL, `synchronous=FULL`, `busy_timeout`, foreign keys on,
 * schema migrated under `BEGIN IMMEDIATE`.
 * @throws {StoreError} `fault` when the file cannot be opened, WAL is unavailable or a migration fails.
 */
export function openSqliteTaskStore(options: SqliteTaskStoreOptions): SqliteTaskStore {
  return SqliteTaskStore.open(options);
}
