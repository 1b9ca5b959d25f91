// P5: memory. Heap and RSS retained per completed task (in-process, through the runtime), and heap retained per
// `tasks/get` in a server process. Both take settled memory after each tenth of the work and report the median
// tenth (see growthPerUnit), so one-off steps such as V8 flushing unused bytecode do not decide the figure.
import { completedLegacyTask, completedModernTask } from '../lib/flows.mjs';
import { fixedCount, growthPerUnit } from '../lib/load.mjs';
import { LegacySession, ModernClient, RpcError } from '../lib/mcp.mjs';

const SEGMENTS = 10;

/**
 * Heap growth per request over `requests` `tasks/get` of completed tasks in a server process, after a warm-up of
 * the same requests: settled heap (full collections in the server) after every tenth, median of the tenths.
 */
async function heapPerRequest(ctx, key, label, open, complete) {
  const clients = ctx.concurrencyHigh;
  const perSegment = Math.ceil(ctx.options.requests / SEGMENTS);
  await ctx.withServer(ctx.ours(), async (server) => {
    const states = await Promise.all(
      Array.from({ length: clients }, async () => {
        const client = await open(server.url);
        return { client, taskId: await complete(client) };
      }),
    );
    const iteration = async ({ client, taskId }) => {
      if ((await client.call('tasks/get', { taskId })).status !== 'completed') throw new RpcError('task not completed');
    };
    await fixedCount({ total: Math.min(perSegment * SEGMENTS, 5000), states, iteration });
    const samples = [await server.gc()];
    const runs = [];
    for (let segment = 0; segment < SEGMENTS; segment += 1) {
      runs.push(await fixedCount({ total: perSegment, states, iteration }));
      samples.push(await server.gc());
    }
    for (const { client } of states) client.close();
    const memory = samples.map((sample) => sample.memory);
    const heap = growthPerUnit(memory, 'heapUsed', perSegment);
    const first = samples[0].cpu;
    const last = samples[SEGMENTS].cpu;
    const errors = runs.reduce((sum, run) => sum + run.errors, 0);
    const firstError = runs.find((run) => run.firstError)?.firstError;
    ctx.record(key, {
      label,
      unit: 'B/request',
      value: heap.median,
      heapOverallBytesPerRequest: heap.overall,
      rssBytesPerRequest: growthPerUnit(memory, 'rss', perSegment).overall,
      requests: perSegment * SEGMENTS,
      requestsPerSecond: (perSegment * SEGMENTS) / runs.reduce((sum, run) => sum + run.seconds, 0),
      errors,
      ...(firstError ? { firstError } : {}),
      cpuUsPerOp: (last.user - first.user + last.system - first.system) / (perSegment * SEGMENTS),
    });
  });
}

export async function p5(ctx) {
  const retained = await ctx.measure('retained', { tasks: ctx.options.tasks, segments: SEGMENTS, warmup: Math.min(1000, ctx.options.tasks), inFlight: 256 });
  ctx.record('p5.heapPerTask', {
    label: `P5 heap retained per completed task over ${retained.tasks} tasks (in-process, runtime + SQLite)`,
    unit: 'B/task',
    value: retained.heapBytesPerTask,
    heapOverallBytesPerTask: retained.heapOverallBytesPerTask,
    rssBytesPerTask: retained.rssBytesPerTask,
    tasks: retained.tasks,
    tasksPerSecond: retained.tasks / retained.seconds,
  });
  const requests = ctx.options.requests;
  await heapPerRequest(
    ctx,
    'p5.heapPerRequest.v2',
    `P5 heap retained per v2 tasks/get over ${requests} requests (server process)`,
    (url) => new ModernClient(url),
    completedModernTask,
  );
  await heapPerRequest(
    ctx,
    'p5.heapPerRequest.v1',
    `P5 heap retained per v1 tasks/get over ${requests} requests (server process)`,
    (url) => new LegacySession(url).open(),
    completedLegacyTask,
  );
}
