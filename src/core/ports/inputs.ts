import type { InputRequestRecord, JsonObject, TaskRecord } from '../task.js';

/** One request of `requestInput` / `answerInput`'s `add`: a question under a key the task has not used. */
export interface NewInputRequest {
  key: string;
  /** The wire request (`elicitation/create` params and method), stored as given (encrypted at rest when configured). */
  request: JsonObject;
}

/** The `change` argument of {@link TaskInputs.requestInput}. */
export interface RequestInputChange {
  /** The instance that must hold the lease for the task to park. */
  leaseOwner: string;
  statusMessage: string | null;
  /** Epoch ms; becomes `lastUpdatedAt`. */
  now: number;
  /**
   * The run waits for the answers in place (a tool with `elicits: 'in-place'`, such as a forwarded upstream call):
   * the task keeps its lease and `attempt`, so no other run starts when it resumes and the holder's heartbeat goes
   * on renewing it. @defaultValue false (the lease is cleared and the run ends)
   */
  holdLease?: boolean;
}

/** The `change` argument of {@link TaskInputs.answerInput}. */
export interface AnswerInputChange {
  answers: ReadonlyArray<{ key: string; response: JsonObject }>;
  retire: ReadonlyArray<{ key: string; response: JsonObject | null }>;
  add: ReadonlyArray<NewInputRequest & { replaces?: string }>;
  /** `undefined` keeps the statusMessage, `null` clears it. */
  statusMessage?: string | null;
  /** Epoch ms; becomes `lastUpdatedAt`. */
  now: number;
}

/** What {@link TaskInputs.answerInput} resolves with: the keys answered or retired, the task after the change. */
export interface AnswerInputResult {
  accepted: string[];
  task: TaskRecord | undefined;
}

/**
 * Input requests (port "inputs"): a running task parks for input (`working → input_required`, SEP-2663 E25–E27) and
 * resumes when every question is answered. Errors: only `StoreError` (`invalid` for a broken precondition, before
 * anything is written); a condition that does not hold answers `undefined`.
 */
export interface TaskInputs {
  /**
   * Park a running task for input: insert `requests` as `pending` and move `working → input_required` in one
   * transaction, only while `leaseOwner` holds the lease. The lease is cleared (a parked task holds none and
   * recovery skips it) and the run that parked is not counted in `attempt` (`attempt -= 1`), since asking for
   * input is not a failure — except with `change.holdLease`, which keeps both (see {@link RequestInputChange}). Appends an `input` event (payload `{added: [keys]}`) and the `status` event.
   * @returns the parked task, or `undefined` when the condition did not hold (cancelled, expired, lease lost).
   * @throws {StoreError} `invalid`, nothing written, for no requests or a key the task already used.
   */
  requestInput(taskId: string, requests: readonly NewInputRequest[], change: RequestInputChange): Promise<TaskRecord | undefined>;

  /** Every input request of a task (any state), in creation order; `[]` for a missing task. */
  listInputRequests(taskId: string): Promise<InputRequestRecord[]>;

  /**
   * Apply answers to an `input_required` task in one transaction (SEP-2663 E25–E27):
   * - `answers`: each key still `pending` becomes `answered` with its response (the first answer wins);
   * - `retire`: each key still `pending` becomes `superseded` (e.g. an answer that failed `requestedSchema`),
   *   keeping the rejected response;
   * - `add`: new `pending` requests (a question asked again under a new key); an entry with `replaces` is added
   *   only if this call retired that key (so a question answered meanwhile elsewhere is not asked again);
   * - keys that are not pending are ignored and not reported as accepted.
   * When no request is pending afterwards, the task moves `input_required → working` with its lease as it was:
   * none after a plain park, so any process may start its next run; the waiting run's after a `holdLease` park, so
   * that run goes on (and if it died, its lapsed lease lets any process recover the task). Appends an `input` event (payload `{answered, retired, added}`) when anything
   * changed, plus the `status` event when it resumed. Nothing is written unless the task is `input_required`.
   * @returns the keys answered or retired, and the task after the change (`undefined` when missing/not waiting).
   * @throws {StoreError} `invalid`, nothing written, when an added key was already used by the task.
   */
  answerInput(taskId: string, change: AnswerInputChange): Promise<AnswerInputResult>;

  /** Up to `limit` unexpired `input_required` tasks whose `lastUpdatedAt <= before` (epoch ms; the input-timeout sweep). */
  listWaitingSince(before: number, limit: number): Promise<TaskRecord[]>;
}
