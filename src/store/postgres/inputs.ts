import type { AnswerInputChange, AnswerInputResult, NewInputRequest, RequestInputChange, TaskInputs } from '../../core/ports/inputs.js';
import { checkInputRequests, inputKeyReused, toLimit } from '../../core/store-rules.js';
import type { InputRequestRecord, JsonObject, TaskRecord } from '../../core/task.js';
import type { InputRequestRow, RowCodec, TaskRow } from '../codec.js';
import type { BatchTx } from './batch.js';
import type { PostgresContext } from './context.js';
import { SQL } from './sql.js';

/**
 * The inputs port on PostgreSQL: `requestInput` and `answerInput`, run inside one operation of a
 * batch. They follow the SQLite store's functions of the same names rule for rule (the contract suite holds both to
 * it) but in set-based statements. A throw (a reused key) takes back everything the operation wrote.
 */

/**
 * `working → input_required` with `requests` pending; the status event before the input event.
 * @returns the parked task, or `undefined` when the task is not working, expired, or not leased to `leaseOwner`.
 * @throws {StoreError} `invalid` when a key was already used by this task (or repeats in `requests`).
 */
export async function parkForInput(
  tx: BatchTx,
  codec: RowCodec,
  taskId: string,
  requests: ReadonlyArray<NewInputRequest>,
  change: RequestInputChange,
): Promise<TaskRecord | undefined> {
  const { leaseOwner, statusMessage, now } = change;
  const [row] = await tx.query<TaskRow>(SQL.parkForInput, [taskId, leaseOwner, statusMessage, now, change.holdLease === true]);
  if (row === undefined) return undefined;
  const added = await insertRequests(tx, codec, taskId, requests, now);
  tx.append(taskId, 'status', 'input_required', now, { from: 'working', to: 'input_required' });
  tx.append(taskId, 'input', 'input_required', now, { added });
  return codec.toRecord(row);
}

/**
 * Answers, retirements and new requests for a waiting task; nothing is written when no request changes (a retried
 * or losing answer must not restart the input timeout). The task row is locked first, so concurrent answers from
 * several instances apply one after the other.
 * @throws {StoreError} `invalid` when an added key was already used by this task.
 */
export async function applyAnswers(tx: BatchTx, codec: RowCodec, taskId: string, change: AnswerInputChange): Promise<AnswerInputResult> {
  const { now } = change;
  const [waiting] = await tx.query<TaskRow>(SQL.waitingTask, [taskId, now]);
  if (waiting === undefined) return { accepted: [], task: undefined };
  const answered = await settle(tx, codec, taskId, firstPerKey(change.answers), 'answered', now);
  const retired = await settle(tx, codec, taskId, firstPerKey(change.retire), 'superseded', now);
  // A replacement question goes in only if the answer it replaces was really retired by this call.
  const add = change.add.filter((entry) => entry.replaces === undefined || retired.includes(entry.replaces));
  const added = await insertRequests(tx, codec, taskId, add, now);
  if (answered.length === 0 && retired.length === 0 && added.length === 0) return { accepted: [], task: codec.toRecord(waiting) };
  const [{ pending }] = (await tx.query<{ pending: boolean }>(SQL.hasPendingInput, [taskId])) as [{ pending: boolean }];
  const resume = !pending;
  const [row] = (await tx.query<TaskRow>(SQL.touchWaiting, [taskId, resume, change.statusMessage !== undefined, change.statusMessage ?? null, now])) as [
    TaskRow,
  ];
  tx.append(taskId, 'input', 'input_required', now, { answered, retired, added });
  if (resume) tx.append(taskId, 'status', 'working', now, { from: 'input_required', to: 'working' });
  return { accepted: [...answered, ...retired], task: codec.toRecord(row) };
}

/** Insert `requests` as pending; a key already used (or repeated) fails the operation. @returns the keys in order. */
async function insertRequests(tx: BatchTx, codec: RowCodec, taskId: string, requests: ReadonlyArray<NewInputRequest>, now: number): Promise<string[]> {
  if (requests.length === 0) return [];
  const keys = requests.map((r) => r.key);
  const inserted = new Set(
    (await tx.query<{ key: string }>(SQL.insertInputRequests, [taskId, now, keys, requests.map((r) => codec.requestText(taskId, r.key, r.request))])).map(
      (r) => r.key,
    ),
  );
  if (inserted.size !== keys.length) {
    const seen = new Set<string>();
    const reused = keys.find((key) => !inserted.has(key) || seen.has(key) || (seen.add(key), false)) as string;
    throw inputKeyReused(reused);
  }
  return keys;
}

/**
 * Move each listed request that is still pending to `state`, storing its response.
 * @returns the keys that changed, in the given order.
 */
async function settle(
  tx: BatchTx,
  codec: RowCodec,
  taskId: string,
  entries: ReadonlyArray<{ key: string; response: JsonObject | null }>,
  state: 'answered' | 'superseded',
  now: number,
): Promise<string[]> {
  if (entries.length === 0) return [];
  const rows = await tx.query<{ key: string; ord: number }>(SQL.settleInputRequests, [
    taskId,
    entries.map((e) => e.key),
    entries.map((e) => codec.responseText(taskId, e.key, e.response)),
    state,
    now,
  ]);
  return rows.sort((a, b) => a.ord - b.ord).map((r) => r.key);
}

/** The first entry per key (a repeat of a key in one call is ignored, as the first one settles it). */
function firstPerKey<T extends { key: string }>(entries: readonly T[]): T[] {
  const seen = new Set<string>();
  return entries.filter((entry) => !seen.has(entry.key) && (seen.add(entry.key), true));
}

/** The inputs port on PostgreSQL (see {@link TaskInputs}): {@link parkForInput} and {@link applyAnswers} as batch operations. */
export class PostgresInputs implements TaskInputs {
  constructor(private readonly ctx: PostgresContext) {}

  /** See {@link TaskInputs.requestInput}. Rejects with `invalid` (before writing) for no requests or a reused key. */
  async requestInput(taskId: string, requests: readonly NewInputRequest[], change: RequestInputChange): Promise<TaskRecord | undefined> {
    checkInputRequests(requests);
    return this.ctx.batcher.enqueue((tx) => parkForInput(tx, this.ctx.codec, taskId, requests, change));
  }

  async listInputRequests(taskId: string): Promise<InputRequestRecord[]> {
    return (await this.ctx.read<InputRequestRow>('list input requests', SQL.listInputRequests, [taskId])).map((row) => this.ctx.codec.toInputRequest(row));
  }

  /** See {@link TaskInputs.answerInput}. A call that changes no request writes nothing. */
  answerInput(taskId: string, change: AnswerInputChange): Promise<AnswerInputResult> {
    return this.ctx.batcher.enqueue((tx) => applyAnswers(tx, this.ctx.codec, taskId, change));
  }

  async listWaitingSince(before: number, limit: number): Promise<TaskRecord[]> {
    return (await this.ctx.read<TaskRow>('list waiting tasks', SQL.waitingSince, [before, toLimit(limit)])).map((row) => this.ctx.codec.toRecord(row));
  }
}
