// The requestor flows the figures are made of. Each returns the number of HTTP requests it made, so CPU per request
// can be reported next to CPU per round trip. Polls follow each other with no sleep (P1 measures the server).
import { RpcError, TERMINAL } from './mcp.mjs';

/** v1 `task.ttl` of every created task; the same for our server and the reference, long enough to outlive a run. */
export const V1_TTL_MS = 600_000;

/**
 * 2025-11-25 round trip: `tools/call` with `task` → `tasks/get` until terminal (at least once) → `tasks/result`.
 * @throws RpcError when the task does not complete.
 */
export async function legacyRoundTrip(session) {
  const created = await session.call('tools/call', { name: 'noop', arguments: {}, task: { ttl: V1_TTL_MS } });
  const taskId = created.task?.taskId;
  if (typeof taskId !== 'string') throw new RpcError(`tools/call answered no task: ${JSON.stringify(created).slice(0, 200)}`);
  let requests = 1;
  let status;
  do {
    status = (await session.call('tasks/get', { taskId })).status;
    requests += 1;
  } while (!TERMINAL.has(status));
  if (status !== 'completed') throw new RpcError(`task ended ${status}`);
  const result = await session.call('tasks/result', { taskId });
  if (!Array.isArray(result.content)) throw new RpcError('tasks/result carried no tool result');
  return requests + 1;
}

/**
 * 2026-07-28 round trip: `tools/call` (extension declared, so a task) → `tasks/get` until terminal, result inline.
 * @throws RpcError when the task does not complete.
 */
export async function modernRoundTrip(client) {
  const created = await client.call('tools/call', { name: 'noop', arguments: {} });
  if (created.resultType !== 'task') throw new RpcError(`tools/call answered no task: ${JSON.stringify(created).slice(0, 200)}`);
  let requests = 1;
  let task;
  do {
    task = await client.call('tasks/get', { taskId: created.taskId });
    requests += 1;
  } while (!TERMINAL.has(task.status));
  if (task.status !== 'completed' || !Array.isArray(task.result?.content)) throw new RpcError(`task ended ${task.status} without a result`);
  return requests;
}

/** Create a task (v2) and wait until it is completed; its id, for scenarios that read completed tasks. */
export async function completedModernTask(client) {
  const created = await client.call('tools/call', { name: 'noop', arguments: {} });
  for (;;) {
    const task = await client.call('tasks/get', { taskId: created.taskId });
    if (task.status === 'completed') return created.taskId;
    if (TERMINAL.has(task.status)) throw new RpcError(`task ended ${task.status}`);
  }
}

/** The same for a 2025-11-25 session. */
export async function completedLegacyTask(session) {
  const created = await session.call('tools/call', { name: 'noop', arguments: {}, task: { ttl: V1_TTL_MS } });
  for (;;) {
    const task = await session.call('tasks/get', { taskId: created.task.taskId });
    if (task.status === 'completed') return created.task.taskId;
    if (TERMINAL.has(task.status)) throw new RpcError(`task ended ${task.status}`);
  }
}
