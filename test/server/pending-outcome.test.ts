/**
 * A poll never answers `working` for work that is done: when a task's run has finished in this process and its
 * outcome is being committed, `tasks/get` (both generations) and v1 `tasks/result` wait for that commit instead of
 * answering a state that is already over. A task whose tool still runs is answered at once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { defineTool, textResult } from '../../src/core/tool.js';
import { type HeldOutcomeStore, withHeldOutcomes } from '../helpers/held-outcome-store.js';
import { gatedTools, Gates } from '../helpers/official-clients.js';
import { RawLegacySession } from '../helpers/sse.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { postModern } from '../helpers/wire.js';

const noop = defineTool({
  name: 'noop',
  description: 'completes at once',
  execution: 'task-optional',
  inputSchema: z.object({}),
  run: async () => textResult('ok'),
});

let running: RunningTasksServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function start(gates = new Gates(), concurrency?: number): Promise<{ server: RunningTasksServer; held: HeldOutcomeStore }> {
  let held!: HeldOutcomeStore;
  running = await startTasksServer({
    tools: [noop, ...gatedTools(gates)],
    wrapStore: (store) => (held = withHeldOutcomes(store)),
    ...(concurrency ? { limits: { concurrency } } : {}),
  });
  return { server: running, held };
}

/** Resolves with `promise`'s value, or 'pending' if it has not settled after `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | 'pending'> {
  return Promise.race([promise, new Promise<'pending'>((resolve) => setTimeout(resolve, ms, 'pending'))]);
}

describe('reads wait for the outcome a finished run is committing', () => {
  it('v2 tasks/get of a task whose outcome is being committed answers completed once it is, never working', async () => {
    const { server, held } = await start();
    const hold = held.holdNextOutcome();
    const taskId = String((await postModern(server.url, 'tools/call', { name: 'noop', arguments: {} })).body.result?.taskId);
    expect(await hold.started).toBe(taskId);
    const get = postModern(server.url, 'tasks/get', { taskId });
    expect(await within(get, 200)).toBe('pending');
    hold.release();
    expect((await get).body.result).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'ok' }] } });
  });

  it('v1 tasks/get and tasks/result of such a task answer its outcome once committed', async () => {
    const { server, held } = await start();
    const session = await RawLegacySession.open(server.url);
    const hold = held.holdNextOutcome();
    const created = await session.request('tools/call', { name: 'noop', arguments: {}, task: { ttl: 60_000 } });
    const taskId = String((created.body.result?.task as { taskId: string }).taskId);
    await hold.started;
    const get = session.request('tasks/get', { taskId });
    const result = session.request('tasks/result', { taskId });
    expect(await within(get, 200)).toBe('pending');
    hold.release();
    expect((await get).body.result).toMatchObject({ status: 'completed' });
    expect((await result).body.result).toMatchObject({ content: [{ type: 'text', text: 'ok' }] });
  });

  it('a finished run frees its slot before its outcome is committed: the next queued task starts meanwhile', async () => {
    const gates = new Gates();
    const { server, held } = await start(gates, 1);
    const hold = held.holdNextOutcome();
    const first = String((await postModern(server.url, 'tools/call', { name: 'noop', arguments: {} })).body.result?.taskId);
    await hold.started;
    const second = String((await postModern(server.url, 'tools/call', { name: 'gated', arguments: { gate: 'next' } })).body.result?.taskId);
    expect(await within(gates.started('next'), 2_000)).toBeUndefined();
    hold.release();
    gates.open('next');
    for (const taskId of [first, second]) {
      await expect.poll(async () => (await postModern(server.url, 'tasks/get', { taskId })).body.result?.status).toBe('completed');
    }
  });

  it('a task whose tool still runs is answered working at once (nothing to wait for)', async () => {
    const gates = new Gates();
    const { server } = await start(gates);
    const taskId = String((await postModern(server.url, 'tools/call', { name: 'gated', arguments: { gate: 'g' } })).body.result?.taskId);
    await gates.started('g');
    expect(
      await within(
        postModern(server.url, 'tasks/get', { taskId }).then((answer) => answer.body.result?.status),
        2_000,
      ),
    ).toBe('working');
    gates.open('g');
  });
});
