import { checkAnswer, type ElicitAnswer, elicitationsOf, type InputHandler } from './input.js';
import type { TaskSnapshot } from './types.js';

/**
 * Answers the `inputRequests` of one 2026-07-28 task (SEP-2663 E21–E24): every key is handed to the handler once,
 * however many snapshots show it; the answers go out in one `tasks/update` per snapshot, only for keys that are
 * still outstanding. An answer whose `tasks/update` failed is sent again with the next snapshot.
 */
export class V2InputResponder {
  /** Keys handed to the handler, in order. */
  readonly asked: string[] = [];
  /** Keys whose answer the server acknowledged. */
  readonly answered: string[] = [];
  private readonly unsent = new Map<string, ElicitAnswer>();

  constructor(
    private readonly taskId: string,
    private readonly handler: InputHandler,
    /** Sends `tasks/update {taskId, inputResponses}`. */
    private readonly update: (responses: Record<string, ElicitAnswer>) => Promise<void>,
  ) {}

  /** Keys handed to the handler that it left unanswered. */
  get left(): string[] {
    return this.asked.filter((key) => !this.answered.includes(key) && !this.unsent.has(key));
  }

  /**
   * Handle a snapshot: ask about keys not seen before, then send every answer still owed.
   * @returns whether a `tasks/update` was sent.
   * @throws what the handler throws; TypeError for an ill-formed answer; errors of `tasks/update`.
   */
  async react(snapshot: TaskSnapshot, signal: AbortSignal): Promise<boolean> {
    if (snapshot.status !== 'input_required' || !snapshot.inputRequests) return false;
    const outstanding = snapshot.inputRequests;
    for (const request of elicitationsOf(outstanding, this.taskId)) {
      if (this.asked.includes(request.key)) continue;
      signal.throwIfAborted();
      this.asked.push(request.key);
      const answer = await this.handler(request, { signal, generation: 'v2' });
      if (answer !== undefined) this.unsent.set(request.key, checkAnswer(request.key, answer));
    }
    // E24: every key sent names a request that is still outstanding (others were answered or superseded).
    for (const key of [...this.unsent.keys()]) if (!Object.hasOwn(outstanding, key)) this.unsent.delete(key);
    if (this.unsent.size === 0) return false;
    const responses = Object.fromEntries(this.unsent);
    await this.update(responses);
    for (const key of Object.keys(responses)) {
      this.unsent.delete(key);
      this.answered.push(key);
    }
    return true;
  }
}
