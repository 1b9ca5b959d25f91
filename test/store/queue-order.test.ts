/**
 * Review 37 (issue 25): a statusMessage write queued BEFORE a transition of the same task, in one tick, must be applied
 * before it (as issued, and as SQLite does), on every backend.
 */
import { expect, it } from 'vitest';

import type { TaskOutcome } from '../../src/core/task.js';
import { describeOnBothStores } from '../helpers/both-stores.js';
import { newTaskInput } from '../helpers/new-task.js';

const RESULT: TaskOutcome = { kind: 'result', result: { content: [{ type: 'text', text: 'done' }] } };

describeOnBothStores('review 37 (issue 25): queue order of a message write and a transition of the same task', (backend) => {
  it('writeStatusMessages(T) issued before transition(T) in the same tick applies first (another transition queued before both)', async () => {
    const store = await backend.open();
    const other = await store.create(newTaskInput());
    const task = await store.create(newTaskInput());
    const before = await store.lastEventSeq();
    const now = Date.now();
    await Promise.all([
      store.transition(other.taskId, { to: 'cancelled', now }),
      store.writeStatusMessages([{ taskId: task.taskId, statusMessage: 'final words', now }]),
      store.transition(task.taskId, { to: 'completed', outcome: RESULT, now: now + 1 }),
    ]);
    // As issued: the message, then the completion (which keeps the statusMessage).
    expect((await store.getUnscoped(task.taskId))?.statusMessage).toBe('final words');
    const events = (await store.readEventsAfter(before, 100)).filter((e) => e.taskId === task.taskId);
    expect(events.map((e) => e.kind)).toEqual(['message', 'status']);
  });
});
