import { assertElicitationDeclared, MAX_INPUT_KEYS_PER_TASK, nextKey, ordinalOfKey, toWireRequest, waitingMessage } from '../core/elicitation.js';
import type { ExecutionHost } from '../core/executor.js';
import type { TaskStore } from '../core/store.js';
import type { InputRequestRecord, JsonObject, TaskRecord } from '../core/task.js';
import type { ElicitResult } from '../core/tool.js';
import { failByRuntime } from './fail-task.js';

/** What a run that waits in place needs of its worker (see `InputWakes`). */
export interface InputWaits {
  /**
   * Resolves at the next input change of the task (an `input` or `status` event of it, in any process) or after a
   * short fallback pause, whichever comes first; rejects with the abort reason when `signal` aborts.
   */
  wake(taskId: string, signal: AbortSignal): Promise<void>;
  /** The run of `taskId` waits for answers from now (`true`) or no longer (`false`): a drain treats it apart. */
  waiting(taskId: string, on: boolean): void;
  /** Whether the run of `taskId` waits for answers now. */
  isWaiting(taskId: string): boolean;
}

/** What a run that waits for its answers in place needs of its host (see {@link waitForAnswers}). */
export interface InPlaceWait {
  waits: InputWaits;
  /** The run's signal: aborted once the run is over (cancelled, expired, lease lost, shutdown). */
  signal: AbortSignal;
  /**
   * Called once every answer a wait needs is in, before the tool gets them: aborts `signal` when the task is no longer
   * this run's to go on with (recovery elsewhere handed it back and the answered task is another run's to start, it
   * ended, or it is gone). One read of the task per answered wait. Rejects only when that read fails.
   */
  confirmHeld(): Promise<void>;
}

/** What a task run's questions need. */
export interface TaskElicitorInput {
  record: TaskRecord;
  store: TaskStore;
  leaseOwner: string;
  now(): number;
  /**
   * The run waits for its answers in place (`elicits: 'in-place'`): what wakes it, the run's signal, and the check
   * made once the answers are in. Absent: the run parks (ends) at an unanswered question.
   */
  inPlace?: InPlaceWait;
  /** Called just before questions are asked in place (drops a status write still pending). */
  beforeAsking?: () => void;
}

/**
 * `ctx.elicitAll` of a task run, as the host answers it: questions answered before are replayed from the store;
 * the first run that reaches an unanswered one parks the task — every question of that call outstanding at once,
 * `working → input_required` with no lease — and the run ends (`parked`). It runs again once all are answered.
 * With `inPlace`, the task goes `input_required` keeping this run's lease and the run waits here for the answers
 * (see {@link waitForAnswers}); `parked` then means the task is no longer this run's to go on with (cancelled,
 * expired, its lease lost, or failed by the input limit).
 * A question that would take the task past `MAX_INPUT_KEYS_PER_TASK` keys fails it (`data.reason: "input_limit"`)
 * and ends the run the same way.
 */
export function createTaskElicitor(input: TaskElicitorInput): ExecutionHost['elicit'] {
  let calls = 0;
  let known: Promise<InputRequestRecord[]> | undefined;
  /** In place, the questions of one run are asked one call at a time (see below); settles when the last one has. */
  let turn: Promise<unknown> = Promise.resolve();
  const elicit: ExecutionHost['elicit'] = (requests) => {
    // Numbered in call order now, whatever waits for its turn.
    const ordinals = requests.map(() => (calls += 1));
    if (!input.inPlace) return ask(requests, ordinals);
    // A second call while one waits in place (an upstream may send its next elicitation/create before the first is
    // answered) would find the task input_required already: its park would be refused and the run end as parked,
    // leaving the task waiting with the lease of a run that is gone. It is asked once the one before is answered.
    const asked = turn.then(() => ask(requests, ordinals));
    turn = asked.catch(() => undefined);
    return asked;
  };
  const ask = async (requests: Parameters<ExecutionHost['elicit']>[0], ordinals: number[]): ReturnType<ExecutionHost['elicit']> => {
    known ??= input.store.listInputRequests(input.record.taskId);
    const rows = await known;
    const answers: ElicitResult[] = [];
    const toAsk: Array<{ key: string; request: JsonObject }> = [];
    let waiting = false;
    requests.forEach((request, index) => {
      const ordinal = ordinals[index] as number;
      const previous = rows.filter((row) => ordinalOfKey(row.key) === ordinal);
      const answered = previous.find((row) => row.state === 'answered');
      if (answered) {
        answers.push(answered.response as unknown as ElicitResult);
        return;
      }
      if (previous.some((row) => row.state === 'pending')) {
        waiting = true;
        return;
      }
      assertElicitationDeclared(input.record.clientCapabilities, request);
      toAsk.push({ key: nextKey(ordinal, previous), request: toWireRequest(request) });
    });
    if (toAsk.length === 0 && !waiting) return { answers };
    if (rows.length + toAsk.length > MAX_INPUT_KEYS_PER_TASK) {
      // Hosts ignore keys past the 16th (see MAX_INPUT_KEYS_PER_TASK): fail now rather than wait for an answer that cannot come.
      const message = `Tool ${input.record.toolName} asked for more than ${MAX_INPUT_KEYS_PER_TASK} inputs over this task's life (${rows.length} asked, ${toAsk.length} more)`;
      await failByRuntime(input.store, input.record.taskId, 'input_limit', message, input.now());
      return { parked: true };
    }
    const { inPlace } = input;
    const { taskId } = input.record;
    if (!inPlace) {
      if (toAsk.length > 0)
        await input.store.requestInput(taskId, toAsk, { leaseOwner: input.leaseOwner, statusMessage: waitingMessageOf(toAsk), now: input.now() });
      return { parked: true };
    }
    // Waiting from before the question is stored: a status the tool sets meanwhile must not land after it.
    inPlace.waits.waiting(taskId, true);
    try {
      if (toAsk.length > 0) {
        input.beforeAsking?.();
        const asked = await input.store.requestInput(taskId, toAsk, {
          leaseOwner: input.leaseOwner,
          statusMessage: waitingMessageOf(toAsk),
          now: input.now(),
          holdLease: true,
        });
        if (asked === undefined) return { parked: true };
      }
      // Later questions must see the keys asked now (a re-ask after an invalid answer adds one more).
      known = undefined;
      return { answers: await waitForAnswers(input.store, taskId, ordinals, inPlace) };
    } finally {
      inPlace.waits.waiting(taskId, false);
    }
  };
  return elicit;
}

/** The statusMessage of a task waiting for `toAsk`: its first question. */
function waitingMessageOf(toAsk: ReadonlyArray<{ request: JsonObject }>): string {
  return waitingMessage((toAsk[0] as { request: JsonObject }).request);
}

/**
 * Wait in place until each question in `ordinals` has an answered key, reading the task's input requests after
 * every wake (an answer may land in any API process; a retired invalid answer is asked again under a new key by
 * the process that took it, and its answer counts the same). The answers go to the tool only while the task is still
 * this run's (`inPlace.confirmHeld`): an answer may land after recovery elsewhere handed the task back and before the
 * heartbeat judged this run, and the answered task is then claimed and run again — this run must not resume beside it.
 * @throws the abort reason of `inPlace.signal` (cancelled, expired, lease lost, shutdown).
 */
async function waitForAnswers(
  store: TaskStore,
  taskId: string,
  ordinals: readonly number[],
  inPlace: NonNullable<TaskElicitorInput['inPlace']>,
): Promise<ElicitResult[]> {
  for (;;) {
    // Armed before the read, so an answer committed between the read and the wait still wakes this loop.
    const woken = inPlace.waits.wake(taskId, inPlace.signal);
    woken.catch(() => undefined);
    const rows = await store.listInputRequests(taskId);
    const found = ordinals.map((ordinal) => rows.find((row) => ordinalOfKey(row.key) === ordinal && row.state === 'answered'));
    if (found.every((row) => row !== undefined)) {
      await inPlace.confirmHeld();
      inPlace.signal.throwIfAborted();
      return found.map((row) => row.response as unknown as ElicitResult);
    }
    await woken;
  }
}
