import type { KillSwitchRecord } from '../core/kill-switch.js';
import type {
  AuditEntry,
  AuditFilter,
  AuditRecord,
  IdempotencyClaim,
  IdempotencyClaimResult,
  IdempotencyRecord,
  NewOperation,
  OperationFilter,
  OperationRecord,
  OperationSettlement,
} from '../core/ledger.js';
import type { CreateAdmission, CreateQuota, TaskAdmission } from '../core/ports/admission.js';
import type { TaskEvent, TaskEventListener, TaskFeed } from '../core/ports/feed.js';
import type { AnswerInputChange, AnswerInputResult, NewInputRequest, RequestInputChange, TaskInputs } from '../core/ports/inputs.js';
import type { TaskLeases } from '../core/ports/leases.js';
import type { LedgerStore } from '../core/ports/ledger.js';
import type { StoreMaintenance } from '../core/ports/maintenance.js';
import type { ProcessRegistry } from '../core/ports/processes.js';
import type { TaskResults } from '../core/ports/results.js';
import type { KillSwitchStore } from '../core/ports/rollout.js';
import type { TaskBrowseQuery, TaskRows, TaskScope, TaskWithOutcome, TransitionRequest } from '../core/ports/rows.js';
import type { SessionTables } from '../core/ports/sessions.js';
import type { JournalEntry, TaskSteps } from '../core/ports/steps.js';
import type { NewProcessEntry, ProcessRecord, RegisterProcessResult } from '../core/process-record.js';
import type { SchemaCompatibility } from '../core/schema-compatibility.js';
import type { ServerSecretStore, SessionStore } from '../core/session-store.js';
import type { TaskStore } from '../core/store.js';
import type { JsonValue, NewTask, TaskGeneration, TaskOutcome, TaskRecord } from '../core/task.js';

/**
 * One backend's implementation of each port by role (`store/<backend>/<port>.ts`, the same file names in every
 * backend). `maintenance` leaves out `close`, which the backend's store class owns (it ends the connection).
 */
export interface StorePorts {
  rows: TaskRows;
  admission: TaskAdmission;
  leases: TaskLeases;
  inputs: TaskInputs;
  results: TaskResults;
  steps: TaskSteps;
  processes: ProcessRegistry;
  feed: TaskFeed;
  ledger: LedgerStore;
  rollout: KillSwitchStore;
  maintenance: Omit<StoreMaintenance, 'close'>;
  sessions: SessionTables;
}

/**
 * A {@link TaskStore} composed of its ports: each method hands its call to the port of its role, once, so the two
 * backends share this map instead of each spelling out ~60 methods. A backend extends it with what only it has
 * (opening, `close`, statistics; PostgreSQL also `watchCommits`). Delegation is one direct call, no allocation.
 */
export abstract class ComposedTaskStore implements TaskStore {
  readonly sessions: SessionStore;
  readonly serverSecret: ServerSecretStore;
  private readonly rows: TaskRows;
  private readonly admission: TaskAdmission;
  private readonly leases: TaskLeases;
  private readonly inputs: TaskInputs;
  private readonly results: TaskResults;
  private readonly steps: TaskSteps;
  private readonly processes: ProcessRegistry;
  private readonly feed: TaskFeed;
  private readonly ledger: LedgerStore;
  private readonly rollout: KillSwitchStore;
  private readonly maintenance: Omit<StoreMaintenance, 'close'>;

  protected constructor(ports: StorePorts) {
    ({ rows: this.rows, admission: this.admission, leases: this.leases, inputs: this.inputs, results: this.results, steps: this.steps } = ports);
    ({ processes: this.processes, feed: this.feed, ledger: this.ledger, rollout: this.rollout, maintenance: this.maintenance } = ports);
    this.sessions = ports.sessions.sessions;
    this.serverSecret = ports.sessions.serverSecret;
  }

  abstract close(): Promise<void>;

  // rows
  create(task: NewTask): Promise<TaskRecord> {
    return this.rows.create(task);
  }
  get(taskId: string, scope: TaskScope): Promise<TaskRecord | undefined> {
    return this.rows.get(taskId, scope);
  }
  getWithOutcome(taskId: string, scope: TaskScope, maxOutcomeChars: number): Promise<TaskWithOutcome | undefined> {
    return this.rows.getWithOutcome(taskId, scope, maxOutcomeChars);
  }
  getUnscoped(taskId: string): Promise<TaskRecord | undefined> {
    return this.rows.getUnscoped(taskId);
  }
  transition(taskId: string, request: TransitionRequest): Promise<TaskRecord | undefined> {
    return this.rows.transition(taskId, request);
  }
  writeStatusMessages(entries: ReadonlyArray<{ taskId: string; statusMessage: string | null; now: number }>): Promise<void> {
    return this.rows.writeStatusMessages(entries);
  }
  list(scope: TaskScope & { generation: TaskGeneration }, page: { afterSeq: number; limit: number }): Promise<TaskRecord[]> {
    return this.rows.list(scope, page);
  }
  browse(query: TaskBrowseQuery): Promise<TaskRecord[]> {
    return this.rows.browse(query);
  }

  // admission
  admitCreate(task: NewTask, quota: CreateQuota): Promise<CreateAdmission> {
    return this.admission.admitCreate(task, quota);
  }

  // leases
  startAttempt(taskId: string, leaseOwner: string, leaseMs: number): Promise<TaskRecord | undefined> {
    return this.leases.startAttempt(taskId, leaseOwner, leaseMs);
  }
  renewLeases(leaseOwner: string, taskIds: readonly string[], leaseMs: number): Promise<string[]> {
    return this.leases.renewLeases(leaseOwner, taskIds, leaseMs);
  }
  claimRunnable(leaseOwner: string, leaseMs: number, limit: number): Promise<TaskRecord[]> {
    return this.leases.claimRunnable(leaseOwner, leaseMs, limit);
  }
  releaseLeases(leaseOwner: string, taskIds: readonly string[]): Promise<string[]> {
    return this.leases.releaseLeases(leaseOwner, taskIds);
  }
  claimLapsed(leaseOwner: string, leaseMs: number, limit: number): Promise<TaskRecord[]> {
    return this.leases.claimLapsed(leaseOwner, leaseMs, limit);
  }
  releaseUnstarted(leaseOwner: string, taskIds: readonly string[]): Promise<string[]> {
    return this.leases.releaseUnstarted(leaseOwner, taskIds);
  }

  releaseLeasesOf(leaseOwner: string): Promise<string[]> {
    return this.leases.releaseLeasesOf(leaseOwner);
  }

  // inputs
  requestInput(taskId: string, requests: readonly NewInputRequest[], change: RequestInputChange): Promise<TaskRecord | undefined> {
    return this.inputs.requestInput(taskId, requests, change);
  }
  listInputRequests(taskId: string): ReturnType<TaskInputs['listInputRequests']> {
    return this.inputs.listInputRequests(taskId);
  }
  answerInput(taskId: string, change: AnswerInputChange): Promise<AnswerInputResult> {
    return this.inputs.answerInput(taskId, change);
  }
  listWaitingSince(before: number, limit: number): Promise<TaskRecord[]> {
    return this.inputs.listWaitingSince(before, limit);
  }

  // results
  getOutcome(taskId: string): Promise<TaskOutcome | undefined> {
    return this.results.getOutcome(taskId);
  }
  putResultChunks(taskId: string, chunks: readonly Uint8Array[], leaseOwner?: string): Promise<boolean> {
    return this.results.putResultChunks(taskId, chunks, leaseOwner);
  }
  discardUnservedResultChunks(taskId: string): Promise<number> {
    return this.results.discardUnservedResultChunks(taskId);
  }
  readResultChunk(taskId: string, index: number): Promise<Uint8Array | undefined> {
    return this.results.readResultChunk(taskId, index);
  }

  // steps
  getStep(taskId: string, name: string): Promise<{ value: JsonValue } | undefined> {
    return this.steps.getStep(taskId, name);
  }
  lookupStep(taskId: string, name: string, leaseOwner: string): Promise<JournalEntry> {
    return this.steps.lookupStep(taskId, name, leaseOwner);
  }
  putStep(taskId: string, name: string, value: JsonValue, leaseOwner?: string): Promise<Exclude<JournalEntry, { kind: 'absent' }>> {
    return this.steps.putStep(taskId, name, value, leaseOwner);
  }
  getToolState(ownerKey: string, tool: string, key: string): Promise<JsonValue | undefined> {
    return this.steps.getToolState(ownerKey, tool, key);
  }
  putToolState(ownerKey: string, tool: string, key: string, value: JsonValue, now: number): Promise<void> {
    return this.steps.putToolState(ownerKey, tool, key, value, now);
  }

  // processes
  registerProcess(entry: NewProcessEntry, ttlMs: number, replaceToken?: string): Promise<RegisterProcessResult> {
    return this.processes.registerProcess(entry, ttlMs, replaceToken);
  }
  heartbeatProcess(instanceId: string, token: string, ttlMs: number): Promise<boolean> {
    return this.processes.heartbeatProcess(instanceId, token, ttlMs);
  }
  markProcessDraining(instanceId: string, token: string): Promise<boolean> {
    return this.processes.markProcessDraining(instanceId, token);
  }
  deregisterProcess(instanceId: string, token: string): Promise<void> {
    return this.processes.deregisterProcess(instanceId, token);
  }
  listProcesses(): Promise<ProcessRecord[]> {
    return this.processes.listProcesses();
  }
  reapLapsedProcesses(exceptInstanceId?: string): Promise<{ instanceIds: string[]; taskIds: string[] }> {
    return this.processes.reapLapsedProcesses(exceptInstanceId);
  }

  // feed (`watchCommits`, optional, is the backend's own)
  readEventsAfter(afterSeq: number, limit: number): Promise<TaskEvent[]> {
    return this.feed.readEventsAfter(afterSeq, limit);
  }
  lastEventSeq(): Promise<number> {
    return this.feed.lastEventSeq();
  }
  listTaskEvents(taskId: string, limit: number): Promise<TaskEvent[]> {
    return this.feed.listTaskEvents(taskId, limit);
  }
  onEvent(listener: TaskEventListener): () => void {
    return this.feed.onEvent(listener);
  }

  // ledger
  findIdempotencyKey(scope: { ownerKey: string; generation: TaskGeneration }, key: string): Promise<IdempotencyRecord | undefined> {
    return this.ledger.findIdempotencyKey(scope, key);
  }
  claimIdempotencyKey(claim: IdempotencyClaim, task?: NewTask, quota?: CreateQuota): Promise<IdempotencyClaimResult> {
    return this.ledger.claimIdempotencyKey(claim, task, quota);
  }
  openOperation(operation: NewOperation): Promise<OperationRecord> {
    return this.ledger.openOperation(operation);
  }
  settleOperation(operationId: string, settlement: OperationSettlement): Promise<OperationRecord | undefined> {
    return this.ledger.settleOperation(operationId, settlement);
  }
  getOperation(operationId: string): Promise<OperationRecord | undefined> {
    return this.ledger.getOperation(operationId);
  }
  listOperations(filter: OperationFilter): Promise<OperationRecord[]> {
    return this.ledger.listOperations(filter);
  }
  appendAudit(entries: readonly AuditEntry[]): Promise<void> {
    return this.ledger.appendAudit(entries);
  }
  listAudit(filter: AuditFilter): Promise<AuditRecord[]> {
    return this.ledger.listAudit(filter);
  }
  purgeAudit(before: number, limit: number): Promise<number> {
    return this.ledger.purgeAudit(before, limit);
  }

  // rollout
  listKillSwitches(): Promise<KillSwitchRecord[]> {
    return this.rollout.listKillSwitches();
  }
  setKillSwitch(record: KillSwitchRecord): Promise<void> {
    return this.rollout.setKillSwitch(record);
  }
  clearKillSwitch(scope: string): Promise<boolean> {
    return this.rollout.clearKillSwitch(scope);
  }

  // maintenance
  expireDue(limit: number): Promise<string[]> {
    return this.maintenance.expireDue(limit);
  }
  compact(): Promise<void> {
    return this.maintenance.compact();
  }
  schemaStatus(): Promise<SchemaCompatibility> {
    return this.maintenance.schemaStatus();
  }
}
