import { taskEndedAudit } from '../../core/ledger.js';
import type { TaskEvent } from '../../core/ports/feed.js';
import type { TransitionRequest } from '../../core/ports/rows.js';
import { checkTransition } from '../../core/store-rules.js';
import type { TaskRecord } from '../../core/task.js';
import { outcomeBody, type RowCodec, type TaskRow } from '../codec.js';
import { type BatchTx, eachUnderSavepoint, type MergedWork, type Query, type Settled } from './batch.js';
import { SQL } from './sql.js';

/**
 * One transition's element of each parameter array of `SQL.transitions` (`$1…$12`, in that order): task, to, set the
 * statusMessage?, statusMessage, now, release the lease?, the allowed from-statuses comma-joined, lease holder, the
 * outcome's kind and body, the `task.ended` entry's kind and detail.
 */
type TransitionValues = readonly [
  taskId: string,
  to: string,
  setMessage: boolean,
  message: string | null,
  now: number,
  releaseLease: boolean,
  from: string,
  leaseOwner: string | null,
  outcomeKind: string | null,
  outcomeBody: string | null,
  auditKind: string | null,
  auditDetail: string | null,
];

/** A queued transition: its task, the request, and its values of the statement's parameter arrays (made once). */
export interface TransitionItem {
  taskId: string;
  request: TransitionRequest;
  values: TransitionValues;
}

/** A row of `SQL.transitions`: the updated task, the item it belongs to (from 1) and the status it had. */
type TransitionRow = TaskRow & { item_ord: number | string; from_status: TaskRecord['status'] };

/**
 * Check `request` and make its queue item.
 * @throws {StoreError} `invalid` for a request the state machine or the outcome rules refuse (nothing is queued).
 */
export function transitionItem(taskId: string, request: TransitionRequest): TransitionItem {
  const from = checkTransition(request);
  const { outcome } = request;
  const values: TransitionValues = [
    taskId,
    request.to,
    request.statusMessage !== undefined,
    request.statusMessage ?? null,
    request.now,
    request.releaseLease === true,
    // Status names hold no comma; the statement splits this with string_to_array ('' is the empty set).
    from.join(','),
    request.leaseOwner ?? null,
    outcome?.kind ?? null,
    outcome === undefined ? null : outcomeBody(outcome),
    ...endedAuditValues(taskId, request),
  ];
  return { taskId, request, values };
}

/**
 * The transitions of a batch as ONE set-based statement (issue 25): a worker completing N runs at once sends one
 * statement (alone in its batch: one autocommit statement with the events), not N, since the per-statement cost
 * (socket write, backend wake-up, bind) dominated our processes' CPU. Each item keeps its own condition and the
 * result it would have alone: `SQL.transitions` applies it only to its own row's newest status.
 *
 * A task id that repeats in one batch (a cancel and a completion of the same task queued together) must see the
 * earlier item's result, which one statement cannot give (it reads every row once): such a batch is split into runs
 * of distinct ids, executed in order inside the batch transaction, and has no one-statement form.
 */
export class PostgresTransitions implements MergedWork<TransitionItem, TaskRecord | undefined> {
  constructor(private readonly codec: RowCodec) {}

  /**
   * The transitions in the batch transaction, their events appended in item order. `isolated` (the rerun after a
   * failure): one savepoint and statement per item, so a failing item rejects alone.
   */
  async run(tx: BatchTx, items: readonly TransitionItem[], isolated: boolean): Promise<Array<Settled<TaskRecord | undefined>>> {
    if (isolated) return eachUnderSavepoint(tx.query, items, async (item) => (await this.apply(tx, [item]))[0]);
    const results: Array<Settled<TaskRecord | undefined>> = [];
    for (const run of distinctRuns(items)) for (const value of await this.apply(tx, run)) results.push({ ok: true, value });
    return results;
  }

  /**
   * The whole batch as one autocommit statement with its events (`SQL.transitionsAlone`); `undefined` (nothing
   * written) when a task id repeats.
   */
  async runAlone(
    query: Query,
    items: readonly TransitionItem[],
  ): Promise<{ results: Array<Settled<TaskRecord | undefined>>; events: TaskEvent[] } | undefined> {
    if (distinctRuns(items).length !== 1) return undefined;
    const rows = byItem(items, await query<TransitionRow & { event_seq: number | string | null }>(SQL.transitionsAlone, columns(items)));
    const events: TaskEvent[] = [];
    items.forEach((item, i) => {
      const row = rows[i];
      if (row === undefined || row.event_seq === null) return;
      const { to, now } = item.request;
      events.push({ seq: Number(row.event_seq), taskId: item.taskId, kind: 'status', status: to, at: now, payload: { from: row.from_status, to } });
    });
    // The statement has committed: a row that cannot be decoded rejects its item alone, never throws (a throw means
    // "nothing written", and the transitions would run again, answering "did not apply").
    return { results: rows.map((row) => settledDecode(() => row && this.codec.toRecord(row))), events };
  }

  /** `items` (distinct task ids) in one `SQL.transitions`; per item its record or `undefined`, events staged in order. */
  private async apply(tx: BatchTx, items: readonly TransitionItem[]): Promise<Array<TaskRecord | undefined>> {
    const rows = byItem(items, await tx.query<TransitionRow>(SQL.transitions, columns(items)));
    return rows.map((row, i) => {
      if (row === undefined) return undefined;
      const { taskId, request } = items[i] as TransitionItem;
      tx.append(taskId, 'status', request.to, request.now, { from: row.from_status, to: request.to });
      return this.codec.toRecord(row);
    });
  }
}

/** `decode()` as a settled result (its throw as the item's error). */
function settledDecode<T>(decode: () => T): Settled<T> {
  try {
    return { ok: true, value: decode() };
  } catch (error) {
    return { ok: false, error };
  }
}

/** The parameter arrays `$1…$12` of `SQL.transitions` for `items` (one element per item, in order). */
function columns(items: readonly TransitionItem[]): unknown[][] {
  const first = items[0];
  if (first === undefined) return [];
  return first.values.map((_, k) => items.map((item) => item.values[k]));
}

/** The statement's rows by item position: `result[i]` is item i's row, `undefined` where it did not apply. */
function byItem<R extends { item_ord: number | string }>(items: readonly TransitionItem[], rows: readonly R[]): Array<R | undefined> {
  const result: Array<R | undefined> = items.map(() => undefined);
  for (const row of rows) result[Number(row.item_ord) - 1] = row;
  return result;
}

/**
 * `items` cut, in order, into the fewest consecutive runs without a repeated task id: running the runs one after
 * another gives exactly the sequential result (items of one run touch distinct rows, so their order within it does
 * not matter; an item whose task came earlier starts a new run, which sees that earlier result).
 */
function distinctRuns(items: readonly TransitionItem[]): TransitionItem[][] {
  const runs: TransitionItem[][] = [];
  let run: TransitionItem[] = [];
  let ids = new Set<string>();
  for (const item of items) {
    if (ids.has(item.taskId)) {
      runs.push(run);
      run = [];
      ids = new Set();
    }
    run.push(item);
    ids.add(item.taskId);
  }
  if (run.length > 0) runs.push(run);
  return runs;
}

/**
 * The kind and detail (JSON) of the `task.ended` entry `taskEndedAudit` makes, or NULLs without `endedAudit`; the
 * statement takes the owner, tool and task from the row it updated.
 */
function endedAuditValues(taskId: string, request: TransitionRequest): [string | null, string | null] {
  if (!request.endedAudit) return [null, null];
  const entry = taskEndedAudit({ ownerKey: '', toolName: '', taskId, status: request.to }, request.now, request.endedAudit.reason);
  return [entry.kind, entry.detail === null ? null : JSON.stringify(entry.detail)];
}
