// The requestor flows the figures are made of. Each returns the number of HTTP requests it made, so CPU per request
// can be reported next to CPU per round trip. How a requestor waits between polls is its `wait`:
//   { kind: 'repoll', everyMs }  first `tasks/get` at once, then every `everyMs` (what impatient clients do);
//   { kind: 'hint' }             before each poll, exactly the hint of the previous answer (create answer included);
//                                1 s when an answer has none, as the SDK clients default.
import { RpcError, TERMINAL } from './mcp.mjs';

/** v1 `task.ttl` of every created task; the same for our server and the reference, long enough to outlive a run. */
export const V1_TTL_MS = 600_000;

/** Re-polling every 10 ms (P1 (a)). */
export const REPOLL_10MS = Object.freeze({ kind: 'repoll', everyMs: 10 });
/** Honouring the server's hint (P1 (c), the hint latencies). */
export const HONOUR_HINT = Object.freeze({ kind: 'hint' });
const NO_HINT_MS = 1000;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Poll `read()` until the task is terminal, waiting as `wait` says. Samples `polls` (tasks/get per task) and
 * `completionToSeenMs` (wall clock when the terminal answer arrived − the task's `lastUpdatedAt`, which is when it
 * became terminal; server and client share this machine's clock).
 * @returns {{task, polls}}
 */
async function pollUntilTerminal(read, createdHintMs, wait, sample) {
  let hint = createdHintMs;
  let polls = 0;
  for (;;) {
    if (wait.kind === 'hint') await sleep(hint ?? NO_HINT_MS);
    else if (polls > 0) await sleep(wait.everyMs);
    const task = await read();
    polls += 1;
    if (TERMINAL.has(task.status)) {
      sample?.('polls', polls);
      const finished = Date.parse(task.lastUpdatedAt);
      if (Number.isFinite(finished)) sample?.('completionToSeenMs', Date.now() - finished);
      return { task, polls };
    }
    hint = task.pollIntervalMs ?? task.pollInterval;
  }
}

/**
 * 2025-11-25 round trip: `tools/call` with `task` → `tasks/get` until terminal → `tasks/result`.
 * @throws RpcError when the task does not complete.
 */
export async function legacyRoundTrip(session, { wait = REPOLL_10MS, tool = { name: 'noop', arguments: {} }, sample } = {}) {
  const created = await session.call('tools/call', { ...tool, task: { ttl: V1_TTL_MS } });
  const taskId = created.task?.taskId;
  if (typeof taskId !== 'string') throw new RpcError(`tools/call answered no task: ${JSON.stringify(created).slice(0, 200)}`);
  const { task, polls } = await pollUntilTerminal(() => session.call('tasks/get', { taskId }), created.task.pollInterval, wait, sample);
  if (task.status !== 'completed') throw new RpcError(`task ended ${task.status}`);
  const result = await session.call('tasks/result', { taskId });
  if (!Array.isArray(result.content)) throw new RpcError('tasks/result carried no tool result');
  return polls + 2;
}

/**
 * 2025-11-25 round trip without polling: `tools/call` with `task` → `tasks/result`, which blocks until the task is
 * terminal (R24) — no polling policy involved (P1 (b)).
 */
export async function legacyBlockingRoundTrip(session) {
  const created = await session.call('tools/call', { name: 'noop', arguments: {}, task: { ttl: V1_TTL_MS } });
  const taskId = created.task?.taskId;
  if (typeof taskId !== 'string') throw new RpcError(`tools/call answered no task: ${JSON.stringify(created).slice(0, 200)}`);
  const result = await session.call('tasks/result', { taskId });
  if (!Array.isArray(result.content)) throw new RpcError('tasks/result carried no tool result');
  return 2;
}

/**
 * 2026-07-28 round trip: `tools/call` (extension declared, so a task) → `tasks/get` until terminal, result inline.
 * @throws RpcError when the task does not complete.
 */
export async function modernRoundTrip(client, { wait = REPOLL_10MS, tool = { name: 'noop', arguments: {} }, sample } = {}) {
  const created = await client.call('tools/call', tool);
  if (created.resultType !== 'task') throw new RpcError(`tools/call answered no task: ${JSON.stringify(created).slice(0, 200)}`);
  const { task, polls } = await pollUntilTerminal(() => client.call('tasks/get', { taskId: created.taskId }), created.pollIntervalMs, wait, sample);
  if (task.status !== 'completed' || !Array.isArray(task.result?.content)) throw new RpcError(`task ended ${task.status} without a result`);
  return polls + 1;
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
