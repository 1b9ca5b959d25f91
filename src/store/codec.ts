import type { JournalEntry } from '../core/ports/steps.js';
import type { TaskEvent, TaskEventKind } from '../core/store.js';
import { StoreError } from '../core/store-error.js';
import { expiresAtOf } from '../core/store-rules.js';
import type {
  InputRequestRecord,
  InputRequestState,
  JsonObject,
  JsonRpcErrorObject,
  JsonValue,
  NewTask,
  TaskGeneration,
  TaskOutcome,
  TaskRecord,
  TaskStatus,
} from '../core/task.js';
import { outcomeBodyOf } from '../core/tool-outcome.js';
import { type FieldCipher, NO_ENCRYPTION } from './field-cipher.js';

/**
 * Conversions between driver rows and the core model, shared by the SQL backends (SQLite and PostgreSQL use the
 * same column names and types: JSON as text, times as integer epoch ms). JSON columns hold `JSON.stringify` output
 * and are read back with `JSON.parse`, so stored bodies round-trip verbatim. Enum columns are trusted: their CHECK
 * constraints already refuse anything else.
 */

/** A `tasks` row as the driver returns it. */
export interface TaskRow {
  task_id: string;
  owner_key: string;
  generation: string;
  protocol_version: string;
  tool_name: string;
  arguments: string;
  client_capabilities: string;
  progress_token: string | null;
  status: string;
  status_message: string | null;
  created_at: number;
  last_updated_at: number;
  ttl_ms: number | null;
  poll_interval_ms: number;
  expires_at: number | null;
  seq: number;
  attempt: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  idempotency_key: string | null;
  request_digest: string | null;
}

/** A `task_events` row as the driver returns it. */
export interface EventRow {
  seq: number;
  task_id: string;
  kind: string;
  status: string;
  at: number;
  payload: string | null;
}

/** An `input_requests` row as the driver returns it. */
export interface InputRequestRow {
  task_id: string;
  key: string;
  request: string;
  response: string | null;
  state: string;
  created_at: number;
  answered_at: number | null;
}

/** A `tasks` row with its decoded `args` as a {@link TaskRecord}. */
function recordOf(row: TaskRow, args: JsonObject): TaskRecord {
  return {
    taskId: row.task_id,
    ownerKey: row.owner_key,
    generation: row.generation as TaskGeneration,
    protocolVersion: row.protocol_version,
    toolName: row.tool_name,
    arguments: args,
    clientCapabilities: JSON.parse(row.client_capabilities) as JsonObject,
    progressToken: row.progress_token === null ? null : (JSON.parse(row.progress_token) as string | number),
    status: row.status as TaskStatus,
    statusMessage: row.status_message,
    createdAt: row.created_at,
    lastUpdatedAt: row.last_updated_at,
    ttlMs: row.ttl_ms,
    pollIntervalMs: row.poll_interval_ms,
    expiresAt: row.expires_at,
    seq: row.seq,
    attempt: row.attempt,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    idempotencyKey: row.idempotency_key,
    requestDigest: row.request_digest,
  };
}

/**
 * Row conversions of the columns that can hold requestors' data — `tasks.arguments`, `input_requests.request` and
 * `.response`, `task_steps.value` — through a {@link FieldCipher} (encrypted at rest when a key is configured; the
 * plain cipher otherwise). Each value is bound to its column and row (task id, and key or step name), so a
 * ciphertext moved elsewhere does not decrypt. One instance per store.
 */
export class RowCodec {
  constructor(private readonly cipher: FieldCipher = NO_ENCRYPTION) {}

  /**
   * A `tasks` row as a {@link TaskRecord}. Arguments that cannot be decoded (a key this store is not configured with,
   * an altered value) do not throw: the record has `arguments` `{}` and `unreadableArguments` set to the error's
   * message, so one such row never fails a claim, a list or a write batch; the run of such a task fails it.
   */
  toRecord(row: TaskRow): TaskRecord {
    let args: JsonObject;
    try {
      args = this.argumentsOf(row);
    } catch (error) {
      const record = recordOf(row, {});
      // Only the message: a JSON parser's error quotes the text it failed on (the arguments themselves).
      record.unreadableArguments = error instanceof StoreError ? error.message : 'stored task arguments are not valid JSON';
      return record;
    }
    return recordOf(row, args);
  }

  private argumentsOf(row: TaskRow): JsonObject {
    return JSON.parse(this.cipher.open(row.arguments, argumentsContext(row.task_id))) as JsonObject;
  }

  /** Named parameters of the task insert for `task` (everything but `seq`); `now` (the store's clock) starts its lease. */
  newTaskParams(task: NewTask, now: number): Record<string, string | number | null> {
    return {
      taskId: task.taskId,
      ownerKey: task.ownerKey,
      generation: task.generation,
      protocolVersion: task.protocolVersion,
      toolName: task.toolName,
      arguments: this.cipher.seal(JSON.stringify(task.arguments), argumentsContext(task.taskId)),
      clientCapabilities: JSON.stringify(task.clientCapabilities),
      // JSON keeps a numeric token numeric (R36 echoes it back with its original type).
      progressToken: task.progressToken === null ? null : JSON.stringify(task.progressToken),
      statusMessage: task.statusMessage,
      createdAt: task.createdAt,
      ttlMs: task.ttlMs,
      pollIntervalMs: task.pollIntervalMs,
      expiresAt: expiresAtOf(task.createdAt, task.ttlMs),
      leaseOwner: task.leaseOwner,
      leaseExpiresAt: task.leaseOwner === null || task.leaseMs === null ? null : now + task.leaseMs,
      idempotencyKey: task.idempotencyKey ?? null,
      requestDigest: task.requestDigest ?? null,
      attempt: task.startNow === true ? 1 : 0,
    };
  }

  /**
   * The record of `task` just inserted with `params` and `seq`, built without reading the row back (it is exactly
   * what the insert wrote; encrypted arguments are taken from the task, not decrypted again).
   */
  insertedRecord(task: NewTask, params: ReturnType<RowCodec['newTaskParams']>, seq: number): TaskRecord {
    const record = PLAIN.toRecord({
      task_id: params.taskId as string,
      owner_key: params.ownerKey as string,
      generation: params.generation as string,
      protocol_version: params.protocolVersion as string,
      tool_name: params.toolName as string,
      arguments: '{}',
      client_capabilities: params.clientCapabilities as string,
      progress_token: params.progressToken as string | null,
      status: 'working',
      status_message: params.statusMessage as string | null,
      created_at: params.createdAt as number,
      last_updated_at: params.createdAt as number,
      ttl_ms: params.ttlMs as number | null,
      poll_interval_ms: params.pollIntervalMs as number,
      expires_at: params.expiresAt as number | null,
      seq,
      attempt: params.attempt as number,
      lease_owner: params.leaseOwner as string | null,
      lease_expires_at: params.leaseExpiresAt as number | null,
      idempotency_key: params.idempotencyKey as string | null,
      request_digest: params.requestDigest as string | null,
    });
    // A copy made the way a read makes it, so the caller never shares the object it passed in.
    record.arguments = JSON.parse(this.cipher === NO_ENCRYPTION ? (params.arguments as string) : JSON.stringify(task.arguments)) as JsonObject;
    return record;
  }

  /** The `request` column of input request `key` of `taskId`. */
  requestText(taskId: string, key: string, request: JsonObject): string {
    return this.cipher.seal(JSON.stringify(request), inputContext('request', taskId, key));
  }

  /** The `response` column of input request `key` of `taskId` (`null` stays `null`). */
  responseText(taskId: string, key: string, response: JsonObject | null): string | null {
    return response === null ? null : this.cipher.seal(JSON.stringify(response), inputContext('response', taskId, key));
  }

  /** An `input_requests` row as an {@link InputRequestRecord}. @throws StoreError `fault` when it cannot be decrypted. */
  toInputRequest(row: InputRequestRow): InputRequestRecord {
    return {
      taskId: row.task_id,
      key: row.key,
      request: JSON.parse(this.cipher.open(row.request, inputContext('request', row.task_id, row.key))) as JsonObject,
      response: row.response === null ? null : (JSON.parse(this.cipher.open(row.response, inputContext('response', row.task_id, row.key))) as JsonObject),
      state: row.state as InputRequestState,
      createdAt: row.created_at,
      answeredAt: row.answered_at,
    };
  }

  /** The `value` column of step `name` of `taskId`. */
  stepText(taskId: string, name: string, value: JsonValue): string {
    return this.cipher.seal(JSON.stringify(value), stepContext(taskId, name));
  }

  /** A stored step value. @throws StoreError `fault` when it cannot be decrypted. */
  stepValue(taskId: string, name: string, text: string): JsonValue {
    return JSON.parse(this.cipher.open(text, stepContext(taskId, name))) as JsonValue;
  }

  /**
   * A run's journal entry from what either store's `lookupStep` statement answers: whether the task is run under the
   * owner (a boolean, or SQLite's 0/1) and the step's stored text, if any.
   * @throws StoreError `fault` when the value cannot be decrypted.
   */
  journalEntry(taskId: string, name: string, row: { held: boolean | number; value: string | null }): JournalEntry {
    if (!row.held) return { kind: 'not_held' };
    return row.value === null ? { kind: 'absent' } : { kind: 'journaled', value: this.stepValue(taskId, name, row.value) };
  }
}

/**
 * What a `putStep` that inserted nothing answers, from the look at what won: the earlier value, or `not_held`. (Held
 * with no value cannot follow a write that inserted nothing — the value that blocked it stays with its task — and is
 * answered as not written, never as a journaled step.)
 */
export function writtenEntry(entry: JournalEntry): Exclude<JournalEntry, { kind: 'absent' }> {
  return entry.kind === 'absent' ? { kind: 'not_held' } : entry;
}

/** The codec without encryption (for values the codec builds itself). */
const PLAIN = new RowCodec(NO_ENCRYPTION);

// Contexts join with NUL, which no task id, key or step name the port accepts can contain.
function argumentsContext(taskId: string): string {
  return `tasks.arguments\u0000${taskId}`;
}

function inputContext(column: 'request' | 'response', taskId: string, key: string): string {
  return `input_requests.${column}\u0000${taskId}\u0000${key}`;
}

function stepContext(taskId: string, name: string): string {
  return `task_steps.value\u0000${taskId}\u0000${name}`;
}

/** A `task_outcomes` row as a {@link TaskOutcome}. */
export function toOutcome(row: { kind: string; body: string }): TaskOutcome {
  return row.kind === 'error'
    ? { kind: 'error', error: JSON.parse(row.body) as JsonRpcErrorObject }
    : { kind: 'result', result: JSON.parse(row.body) as JsonObject };
}

/** The `body` column for `outcome`. */
export function outcomeBody(outcome: TaskOutcome): string {
  return JSON.stringify(outcomeBodyOf(outcome));
}

/** A `task_events` row as a {@link TaskEvent}. */
export function toEvent(row: EventRow): TaskEvent {
  return {
    seq: row.seq,
    taskId: row.task_id,
    kind: row.kind as TaskEventKind,
    status: row.status as TaskStatus,
    at: row.at,
    payload: row.payload === null ? null : (JSON.parse(row.payload) as JsonObject),
  };
}
