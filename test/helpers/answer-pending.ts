import type { TaskStore } from '../../src/core/store.js';
import type { JsonObject } from '../../src/core/task.js';

/**
 * Accept every question `taskId` has pending, with `content`, as the store records an answer that arrived (for tests
 * that answer through the store, not over the wire). Returns `answerInput`'s result; throws when nothing is pending.
 */
export async function answerPending(store: Pick<TaskStore, 'listInputRequests' | 'answerInput'>, taskId: string, content: JsonObject = { confirm: true }) {
  const pending = (await store.listInputRequests(taskId)).filter((request) => request.state === 'pending');
  if (pending.length === 0) throw new Error(`task ${taskId} has no question pending`);
  return store.answerInput(taskId, {
    answers: pending.map((request) => ({ key: request.key, response: { action: 'accept', content } })),
    retire: [],
    add: [],
    now: Date.now(),
  });
}
