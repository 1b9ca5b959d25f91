import { z } from 'zod';

import { RELATED_TASK_META_KEY } from '../protocol/constants.js';
import { checkAnswer, type ElicitAnswer, type ElicitationParams, type InputHandler, type InputRequest } from './input.js';

/**
 * The 2025-11-25 input side channel (R27–R31): the server sends `elicitation/create` as a request to the client,
 * on the stream of an open `tasks/result` when a task asks (with the related-task `_meta`, R28), or on the stream
 * of the `tools/call` itself when the call gathers input before it becomes a task. The SDK client hands each such
 * request to {@link V1InputRouter.handle}; whatever it resolves with is posted back as the JSON-RPC response.
 */

/** Prefix of the request ids an mcp-tasks server mints for task questions: `mcp-tasks-input/<taskId>/<key>`. */
const ID_PREFIX = 'mcp-tasks-input/';

/** Answers the questions of one task; `undefined` leaves a question unanswered on this connection. */
export type TaskAnswerer = (request: InputRequest) => Promise<ElicitAnswer | undefined>;

const RelatedTaskSchema = z.looseObject({ taskId: z.string().min(1) });

/** The key of a question from its JSON-RPC id: the mcp-tasks key when the id has that form, else the id itself. */
function keyOfRequestId(id: string | number, taskId: string | undefined): string {
  const text = String(id);
  const prefix = `${ID_PREFIX}${taskId ?? ''}/`;
  return taskId !== undefined && text.startsWith(prefix) && text.length > prefix.length ? text.slice(prefix.length) : text;
}

/** A promise that never settles: the SDK then never answers the request, which leaves the question open. */
function never<T>(): Promise<T> {
  return new Promise<T>(() => {});
}

/** The error the SDK turns into a JSON-RPC error response for a call-phase question nobody answers. */
class NoAnswerError extends Error {
  readonly code = -32603;
  constructor(key: string) {
    super(`No answer for ${key}: the client could not ask the user`);
  }
}

/**
 * Routes incoming `elicitation/create` requests: a task's question to the answerer attached for that task (left
 * open when none is attached — another client may answer it), a call's question to the connection's handler.
 */
export class V1InputRouter {
  private readonly answerers = new Map<string, TaskAnswerer>();
  /** Call-phase questions the handler left unanswered, newest last (read by `callTool` for its error). */
  readonly unansweredCallQuestions: InputRequest[] = [];

  constructor(private readonly callHandler: InputHandler | undefined) {}

  /**
   * Answer one request (the SDK's `elicitation/create` handler).
   * @param request - the validated request (`params` with `_meta`); `id` its JSON-RPC id; `signal` aborted when
   *   the connection closes.
   */
  async handle(request: { params: Record<string, unknown> }, id: string | number, signal: AbortSignal): Promise<ElicitAnswer> {
    const { _meta: meta, ...params } = request.params as { _meta?: Record<string, unknown> };
    const related = RelatedTaskSchema.safeParse(meta?.[RELATED_TASK_META_KEY]);
    const taskId = related.success ? related.data.taskId : undefined;
    const input: InputRequest = {
      key: keyOfRequestId(id, taskId),
      ...(taskId === undefined ? {} : { taskId }),
      method: 'elicitation/create',
      params: params as ElicitationParams,
    };
    if (taskId !== undefined) {
      const answerer = this.answerers.get(taskId);
      const answer = answerer ? await answerer(input) : undefined;
      return answer ?? never();
    }
    const answer = this.callHandler ? await this.callHandler(input, { signal, generation: 'v1' }) : undefined;
    if (answer === undefined) {
      this.unansweredCallQuestions.push(input);
      throw new NoAnswerError(input.key);
    }
    return checkAnswer(input.key, answer);
  }

  /** Attach the answerer of a task's questions; returns the detach function. One answerer per task at a time. */
  attach(taskId: string, answerer: TaskAnswerer): () => void {
    this.answerers.set(taskId, answerer);
    return () => {
      if (this.answerers.get(taskId) === answerer) this.answerers.delete(taskId);
    };
  }
}

/**
 * One task's questions during one wait or `answerTask`: each key is answered at most once (a question sent again
 * on a new `tasks/result` gets the same answer), a handler that leaves a key unanswered is not asked again, and a
 * handler failure is kept for the waiter to rethrow (the request is then left unanswered, never answered with an
 * error, which the server would record as `cancel`).
 */
export class V1TaskQuestions {
  /** Questions in arrival order. */
  readonly arrived: InputRequest[] = [];
  /** Keys answered (the answers are posted by the SDK). */
  readonly answered: string[] = [];
  /** The first handler failure, if any. */
  failure: unknown;
  private readonly answers = new Map<string, Promise<ElicitAnswer | undefined>>();
  private readonly listeners = new Set<() => void>();
  private settledCount = 0;

  constructor(
    private readonly handler: InputHandler,
    private readonly signal: AbortSignal,
  ) {}

  /** The {@link TaskAnswerer} to attach to the router. */
  readonly answer: TaskAnswerer = (request) => {
    let answer = this.answers.get(request.key);
    if (!answer) {
      this.arrived.push(request);
      answer = this.ask(request);
      this.answers.set(request.key, answer);
    }
    return answer;
  };

  /** Keys that arrived and were left unanswered (or are still being asked). */
  get left(): string[] {
    return this.arrived.map((request) => request.key).filter((key) => !this.answered.includes(key));
  }

  /** Whether the handler is done with every question that arrived. */
  get settled(): boolean {
    return this.settledCount === this.arrived.length;
  }

  /** Call `listener` whenever a question arrives or is settled; returns the unsubscribe function. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private async ask(request: InputRequest): Promise<ElicitAnswer | undefined> {
    this.changed();
    try {
      if (this.failure !== undefined) return undefined;
      const raw = await this.handler(request, { signal: this.signal, generation: 'v1' });
      if (raw === undefined) return undefined;
      const answer = checkAnswer(request.key, raw);
      this.answered.push(request.key);
      return answer;
    } catch (error) {
      this.failure ??= error;
      return undefined;
    } finally {
      this.settledCount += 1;
      this.changed();
    }
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }
}
