// P5 (per task): heap and RSS a server retains per completed task. Creates `tasks` noop tasks through the real
// task service, worker and SQLite store (`inFlight` at a time, each awaited until terminal) in `segments` equal batches and
// takes settled memory (full collections) after a warm-up and after every batch, so lazy initialisation is not
// charged to tasks and one-off steps do not decide the figure.
// Run by the driver: node --expose-gc bench/inproc/retained.mjs '{"dir", "tasks", "segments", "warmup", "inFlight"}'
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { createTasksServer } from '../../dist/index.js';
import { openSqliteTaskStore } from '../../dist/store/sqlite/index.js';
import { growthPerUnit, settledMemory } from '../lib/load.mjs';
import tools from '../tools.mjs';

const options = JSON.parse(process.argv[2]);
const noop = tools.find((tool) => tool.name === 'noop');
const store = openSqliteTaskStore({ path: join(options.dir, 'tasks.db') });
// Every call must become a task: the inline grace (issue 27 §5) would answer a finished run inline.
const server = await createTasksServer({ tools, store, secret: randomBytes(32), limits: { inlineGraceMs: 0 } });
// The task service's own door, as every adapter uses it: plan the call, then carry it out.
const caller = {
  ownerKey: 'anonymous',
  // The anonymous caller of stdio / no --auth holds every scope (the service door re-checks scopes).
  scopes: 'all',
  negotiation: 'per-request',
  generation: 'v2',
  protocolVersion: '2026-07-28',
  clientCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};
const toolName = noop.name;
async function createTask() {
  const outcome = await server.service.calls.callTool(caller, await server.service.calls.planCall(caller, { name: toolName, progressToken: null }));
  if (outcome.kind !== 'task') throw new Error(`no task: ${JSON.stringify(outcome)}`);
  return outcome.task;
}

/** Create `count` tasks, `inFlight` at a time, each awaited until terminal. */
async function createCompleted(count) {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next += 1;
      const record = await createTask();
      const done = await server.service.tasks.waitForTerminal(caller, record.taskId, new AbortController().signal);
      if (done.status !== 'completed') throw new Error(`task ended ${done.status}`);
    }
  };
  await Promise.all(Array.from({ length: options.inFlight }, worker));
}

await createCompleted(options.warmup);
// Settled memory after the warm-up and after each of `segments` equal batches (see growthPerUnit).
const perSegment = Math.ceil(options.tasks / options.segments);
const samples = [await settledMemory()];
const started = Date.now();
for (let segment = 0; segment < options.segments; segment += 1) {
  await createCompleted(perSegment);
  samples.push(await settledMemory());
}
const seconds = (Date.now() - started) / 1000;
await server.close();
await store.close();
const heap = growthPerUnit(samples, 'heapUsed', perSegment);
const rss = growthPerUnit(samples, 'rss', perSegment);
process.stdout.write(
  `${JSON.stringify({ tasks: perSegment * options.segments, seconds, heapBytesPerTask: heap.median, heapOverallBytesPerTask: heap.overall, rssBytesPerTask: rss.overall, samples })}\n`,
);
