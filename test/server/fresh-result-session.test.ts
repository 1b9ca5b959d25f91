/**
 * Review 37b: a blocking v1 `tasks/result` that started from the record this process created (FreshTasks, 671ed0b)
 * checks the session on EVERY read of its wait — also on the read at the task's end, long after its 200 headers went
 * out. A session record that goes away while the request waits (a DELETE elsewhere, or the idle prune of a session
 * whose only traffic is this one long request: `sessionIdleMs`) then turns the finished task's result into -32602
 * "Task not found" — while the same request on a task created by another instance (the look read the session once,
 * the wait's reads do not check it) still gets the result. Before 671ed0b both got the result.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { defineTool, textResult } from '../../src/core/tool.js';
import { RawLegacySession } from '../helpers/sse.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';

const gates: Array<() => void> = [];
let started = false;
const held = defineTool({
  name: 'held',
  description: 'Waits for the test, then returns.',
  execution: 'task-optional',
  inputSchema: z.object({}),
  async run() {
    started = true;
    await new Promise<void>((resolve) => gates.push(resolve));
    return textResult('released');
  },
});

const servers: RunningTasksServer[] = [];
afterEach(async () => {
  for (const gate of gates.splice(0)) gate();
  for (const server of servers.splice(0).reverse()) await server.close();
});

async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Create the held task on `creator`, then ask its blocking result on `asker` in a session of `asker`. */
async function scenario(sameInstance: boolean): Promise<{ status: number; last: unknown }> {
  const creator = await startTasksServer({ tools: [held] });
  servers.push(creator);
  const asker = sameInstance ? creator : await startTasksServer({ tools: [held], dbPath: creator.dbPath });
  if (!sameInstance) servers.push(asker);
  started = false;
  const creating = await RawLegacySession.open(creator.url);
  const created = await creating.post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'held', arguments: {}, task: {} } });
  const taskId = (created.messages[0] as { result: { task: { taskId: string } } }).result.task.taskId;
  await until(() => started && gates.length === 1);
  const session = sameInstance ? creating : await RawLegacySession.open(asker.url);
  const answer = session.post({ jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId } });
  // Past the held-back time: the session was checked (it existed), the 200 headers are out, the request waits.
  await new Promise((resolve) => setTimeout(resolve, 1_400));
  // The session record goes away while the request waits (a DELETE on another instance; the idle prune alike).
  expect(await asker.store.sessions.deleteSession(session.sessionId)).toBe(true);
  gates.shift()?.();
  const answered = await answer;
  return { status: answered.status, last: answered.messages.at(-1) };
}

describe('review 37b: the session record gone while a blocking v1 tasks/result waits, after its headers', () => {
  it('negative control: a task created by another instance — the waiting request gets the result', async () => {
    const { status, last } = await scenario(false);
    expect(status).toBe(200);
    expect(last).toMatchObject({ id: 2, result: { content: [{ type: 'text', text: 'released' }] } });
  });

  it('a task created by this instance (FreshTasks) — the waiting request gets the result too, not "Task not found"', async () => {
    const { status, last } = await scenario(true);
    expect(status).toBe(200);
    expect(last).toMatchObject({ id: 2, result: { content: [{ type: 'text', text: 'released' }] } });
  });
});
