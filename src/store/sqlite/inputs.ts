import type { TaskEvent } from '../../core/ports/feed.js';
import type { AnswerInputChange, AnswerInputResult, NewInputRequest, RequestInputChange, TaskInputs } from '../../core/ports/inputs.js';
import { checkInputRequests, inputKeyReused, toLimit } from '../../core/store-rules.js';
import type { InputRequestRecord, JsonObject, TaskRecord } from '../../core/task.js';
import type { RowCodec } from '../codec.js';
import type { SqliteContext } from './context.js';
import type { InputRequestRow, Statements, TaskRow } from './sql.js';

/**
 * The inputs port on SQLite: `requestInput` and `answerInput` as functions that run
 * synchronously inside one operation of a group-commit batch. Each runs under the batch's per-operation
 * savepoint, so a throw (e.g. a reused key) takes back every row and event it wrote and nothing else.
 */

/** What the operations need from the batch they run in. */
export interface BatchWriter {
  readonly stmt: Statements;
  /** The store's row codec (encrypts requests and answers when a key is configured). */
  readonly codec: RowCodec;
  /** Insert one `task_events` row in the current operation; it is published only if the batch commits. */
  append(taskId: string, kind: TaskEvent['kind'], status: TaskEvent['status'], at: number, payload: JsonObject | null): void;
}

/**
 * `working → input_required` with `requests` pending (see {@link TaskInputs.requestInput}). The status event comes
 * before the input event, so every event carries the status the task had right after it.
 * @returns the parked task, or `undefined` when the task is not working, expired, or not leased to `leaseOwner`.
 * @throws {StoreError} `invalid` when a key was already used by this task (the whole operation is rolled back).
 */
export function parkForInput(w: BatchWriter, taskId: string, requests: ReadonlyArray<NewInputRequest>, change: RequestInputChange): TaskRecord | undefined {
  const { leaseOwner, statusMessage, now } = change;
  const row = w.stmt.parkForInput.get({ taskId, leaseOwner, statusMessage, now, hold: change.holdLease === true ? 1 : 0 }) as TaskRow | undefined;
  if (row === undefined) return undefined;
  const added = insertRequests(w, taskId, requests, now);
  w.append(taskId, 'status', 'input_required', now, { from: 'working', to: 'input_required' });
  w.append(taskId, 'input', 'input_required', now, { added });
  return w.codec.toRecord(row);
}

/**
 * Apply answers, retirements and new requests to a waiting task (see {@link TaskInputs.answerInput}).
 *
 * Only requests still `pending` change (`SQL.settleInputRequest`), so duplicates, unknown keys and the loser of
 * a concurrent answer are ignored. A call that changes no request writes nothing at all, not even its
 * statusMessage or `lastUpdatedAt`: a retried or losing answer must not restart the input timeout
 * (`listWaitingSince`). Answers apply before retirements, so a key listed in both is answered. The input event
 * comes before the status event of a resume, so it still carries `input_required`, the status the answers were
 * given in.
 * @returns `accepted`: the answered keys, then the retired ones, each in the given order.
 * @throws {StoreError} `invalid` when an added key was already used by this task (the whole operation is rolled back).
 */
export function applyAnswers(w: BatchWriter, taskId: string, change: AnswerInputChange): AnswerInputResult {
  const { now } = change;
  const waiting = w.stmt.waitingTask.get({ taskId, now }) as TaskRow | undefined;
  if (waiting === undefined) return { accepted: [], task: undefined };
  const answered = settle(w, taskId, change.answers, 'answered', now);
  const retired = settle(w, taskId, change.retire, 'superseded', now);
  // A replacement question goes in only if the answer it replaces was really retired by this call: when another
  // process answered that key first, asking again would wait for a question that is already settled.
  const added = insertRequests(
    w,
    taskId,
    change.add.filter((entry) => entry.replaces === undefined || retired.includes(entry.replaces)),
    now,
  );
  if (answered.length === 0 && retired.length === 0 && added.length === 0) {
    return { accepted: [], task: w.codec.toRecord(waiting) };
  }
  const { pending } = w.stmt.hasPendingInput.get({ taskId }) as { pending: number };
  const resume = pending === 0;
  // Inside the write transaction the status read above still holds, so this update always applies.
  const row = w.stmt.touchWaiting.get({
    taskId,
    resume: resume ? 1 : 0,
    setMessage: change.statusMessage === undefined ? 0 : 1,
    statusMessage: change.statusMessage ?? null,
    now,
  }) as TaskRow;
  w.append(taskId, 'input', 'input_required', now, { answered, retired, added });
  if (resume) w.append(taskId, 'status', 'working', now, { from: 'input_required', to: 'working' });
  return { accepted: [...answered, ...retired], task: w.codec.toRecord(row) };
}

/**
 * Insert `requests` as pending. A key the task already used (in any state, or twice in `requests`) throws, so
 * the caller's savepoint discards the whole operation: keys are chosen by the runtime and never reused, so a
 * collision is a bug that must not half-apply.
 * @returns the keys, in the given order.
 */
function insertRequests(w: BatchWriter, taskId: string, requests: ReadonlyArray<NewInputRequest>, now: number): string[] {
  for (const { key, request } of requests) {
    const { changes } = w.stmt.insertInputRequest.run({ taskId, key, request: w.codec.requestText(taskId, key, request), now });
    if (changes === 0) throw inputKeyReused(key);
  }
  return requests.map((r) => r.key);
}

/**
 * Move each listed request that is still pending to `state`, storing its response.
 * @returns the keys that changed, in the given order (each at most once).
 */
function settle(
  w: BatchWriter,
  taskId: string,
  entries: ReadonlyArray<{ key: string; response: JsonObject | null }>,
  state: 'answered' | 'superseded',
  now: number,
): string[] {
  const changed: string[] = [];
  for (const { key, response } of entries) {
    const { changes } = w.stmt.settleInputRequest.run({
      taskId,
      key,
      state,
      response: w.codec.responseText(taskId, key, response),
      now,
    });
    if (changes === 1) changed.push(key);
  }
  return changed;
}

/**
 * The inputs port on SQLite (see {@link TaskInputs}): {@link parkForInput} and {@link applyAnswers} as operations of
 * the group commit.
 */
export class SqliteInputs implements TaskInputs {
  constructor(private readonly ctx: SqliteContext) {}

  /**
   * See {@link TaskInputs.requestInput}. Rejects with `invalid` before writing when `requests` is empty (such a task
   * could never resume), and with `invalid` and nothing written when a key was already used by the task.
   */
  async requestInput(taskId: string, requests: readonly NewInputRequest[], change: RequestInputChange): Promise<TaskRecord | undefined> {
    checkInputRequests(requests);
    return this.ctx.committer.enqueue((events) => parkForInput(this.ctx.writer(events), taskId, requests, change));
  }

  async listInputRequests(taskId: string): Promise<InputRequestRecord[]> {
    const rows = await this.ctx.readDurable('list input requests', () => this.ctx.stmt.listInputRequests.all({ taskId }));
    return (rows as InputRequestRow[]).map((row) => this.ctx.codec.toInputRequest(row));
  }

  /**
   * See {@link TaskInputs.answerInput}. A task past its TTL counts as not waiting. A call that changes no request
   * writes nothing (not even `statusMessage`). Rejects with `invalid` and nothing written when an added key was
   * already used by the task.
   */
  answerInput(taskId: string, change: AnswerInputChange): Promise<AnswerInputResult> {
    return this.ctx.committer.enqueue((events) => applyAnswers(this.ctx.writer(events), taskId, change));
  }

  /**
   * See {@link TaskInputs.listWaitingSince}. Oldest `lastUpdatedAt` first (ties by `seq`). Expiry is judged at
   * `before`, the only time the port passes (see `SQL.waitingSince`).
   */
  async listWaitingSince(before: number, limit: number): Promise<TaskRecord[]> {
    const rows = await this.ctx.readDurable('list waiting tasks', () => this.ctx.stmt.waitingSince.all({ before, limit: toLimit(limit) }));
    return (rows as TaskRow[]).map((row) => this.ctx.codec.toRecord(row));
  }
}
