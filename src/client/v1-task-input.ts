import { z } from 'zod';

import type { InputHandler } from './input.js';
import type { McpSession } from './session.js';
import type { TaskSnapshot } from './types.js';
import { type V1InputRouter, V1TaskQuestions } from './v1-input-router.js';
import type { Waker } from './wait.js';

/**
 * Answering a 2025-11-25 task's questions: the requestor calls `tasks/result` when it sees `input_required` (R29)
 * and answers the `elicitation/create` requests the server sends on that call's stream. The call returns when the
 * task ends; it is then repeated by the normal delivery (a terminal `tasks/result` is a repeatable read, R23).
 */

const AnyResult = z.looseObject({});
/** setTimeout's largest delay: `tasks/result` may be held open for as long as the task runs. */
const HELD_OPEN_MS = 2_147_483_647;
/** After the last question was answered, how long more questions may take to arrive before `answerTask` stops (ms). */
const V1_QUIET_MS = 1000;

/** One open `tasks/result` with an answerer attached for the task's questions. */
class ResultStream {
  private readonly controller = new AbortController();
  private readonly detach: () => void;
  /** Settles (never rejects) when the call returns, fails or is closed. */
  readonly done: Promise<void>;
  ended = false;

  constructor(session: McpSession, router: V1InputRouter, taskId: string, questions: V1TaskQuestions, signal: AbortSignal) {
    this.detach = router.attach(taskId, questions.answer);
    const requestSignal = AbortSignal.any([this.controller.signal, signal]);
    this.done = session
      .request('tasks/result', { taskId }, AnyResult, { signal: requestSignal, timeoutMs: HELD_OPEN_MS, resendOnLostSession: true })
      .then(
        () => {},
        () => {},
      )
      .finally(() => {
        this.ended = true;
      });
  }

  /** Stop listening (the server sees the request cancelled; the task is not affected). */
  close(): void {
    this.controller.abort();
    this.detach();
  }
}

/**
 * The input side of one `waitForTask` on a v1 task: opens `tasks/result` the first time the task is
 * `input_required` (again if that call ended while the task still waits) and wakes the poll loop when the call
 * returns or the handler fails.
 */
export class V1InputWait {
  private questions: V1TaskQuestions | undefined;
  private stream: ResultStream | undefined;

  constructor(
    private readonly session: McpSession,
    private readonly router: V1InputRouter,
    private readonly taskId: string,
    private readonly handler: InputHandler,
    private readonly waker: Waker,
  ) {}

  /**
   * The `react` hook of the wait.
   * @throws the handler's failure, once it happened.
   */
  readonly react = async (snapshot: TaskSnapshot, signal: AbortSignal): Promise<boolean> => {
    if (!this.questions) {
      this.questions = new V1TaskQuestions(this.handler, signal);
      this.questions.onChange(() => {
        if (this.questions?.failure !== undefined) this.waker.wake();
      });
    }
    if (this.questions.failure !== undefined) throw this.questions.failure;
    if (snapshot.status !== 'input_required' || (this.stream && !this.stream.ended)) return false;
    const stream = new ResultStream(this.session, this.router, this.taskId, this.questions, signal);
    this.stream = stream;
    void stream.done.then(() => this.waker.wake());
    return false;
  };

  /** End the wait's `tasks/result`, if open. */
  close(): void {
    this.stream?.close();
  }
}

/**
 * Answer the questions a v1 task has outstanding: open `tasks/result`, hand each question that arrives to the
 * handler, and stop once the handler is done with all of them and either the task left `input_required` or no
 * further question arrived within {@link V1_QUIET_MS} (re-asked questions come on the same stream).
 * @param firstQuestionMs - how long to wait for the server's first question.
 * @throws the handler's failure; the signal's reason.
 */
export async function answerV1Task(
  session: McpSession,
  router: V1InputRouter,
  taskId: string,
  handler: InputHandler,
  getTask: () => Promise<TaskSnapshot>,
  options: { signal: AbortSignal; firstQuestionMs: number },
): Promise<V1TaskQuestions> {
  const questions = new V1TaskQuestions(handler, options.signal);
  const stream = new ResultStream(session, router, taskId, questions, options.signal);
  try {
    await changeOf(questions, stream, () => questions.arrived.length > 0, options.firstQuestionMs, options.signal);
    for (;;) {
      // Not cut short by the stream ending: an answer being typed is still posted when it is given.
      await changeOf(questions, undefined, () => questions.settled || questions.failure !== undefined, undefined, options.signal);
      if (questions.failure !== undefined) throw questions.failure;
      await session.flush(); // the answers have reached the server before its state is read
      if ((await getTask()).status !== 'input_required') break;
      const seen = questions.arrived.length;
      await changeOf(questions, stream, () => questions.arrived.length > seen, V1_QUIET_MS, options.signal);
      if (questions.arrived.length === seen) break;
    }
    return questions;
  } finally {
    stream.close();
    await session.flush();
  }
}

/**
 * Resolves when `done()` holds (checked on every change of `questions`), when `stream` (if given) ended, or after
 * `ms`.
 * @throws the signal's reason when aborted.
 */
function changeOf(
  questions: V1TaskQuestions,
  stream: ResultStream | undefined,
  done: () => boolean,
  ms: number | undefined,
  signal: AbortSignal,
): Promise<void> {
  return new Promise((resolve, reject) => {
    if (done() || stream?.ended) return resolve();
    if (signal.aborted) return reject(signal.reason);
    const cleanup = (): void => {
      unsubscribe();
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    };
    const finish = (): void => {
      cleanup();
      resolve();
    };
    const onAbort = (): void => {
      cleanup();
      reject(signal.reason);
    };
    const unsubscribe = questions.onChange(() => {
      if (done()) finish();
    });
    const timer = ms === undefined ? undefined : setTimeout(finish, ms);
    void stream?.done.then(finish);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
