// P4: pick-up latency, from a task's create being committed (the moment `tools/call` may answer) to its tool's
// `run` starting, with N creators in a closed loop through the real task service, worker and SQLite store. In-process, because
// both instants must come from one clock (performance.now()).
// Run by the driver: node --expose-gc bench/inproc/pickup.mjs '{"dir", "clients", "warmupMs", "durationMs"}'
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import { z } from 'zod';

import { createTasksServer, defineTool, textResult } from '../../dist/index.js';
import { openSqliteTaskStore } from '../../dist/store/sqlite/index.js';
import { closedLoop, thisProcess } from '../lib/load.mjs';

const options = JSON.parse(process.argv[2]);

/** taskId → the instant its run started, or a waiter for it (the run may start before the creator asks). */
const starts = new Map();

function runStarted(taskId) {
  const known = starts.get(taskId);
  if (typeof known === 'number') {
    starts.delete(taskId);
    return Promise.resolve(known);
  }
  return new Promise((resolve) => starts.set(taskId, resolve));
}

const probe = defineTool({
  name: 'pickup_probe',
  description: 'Records when its run starts.',
  execution: 'task-optional',
  idempotent: true,
  inputSchema: z.object({}),
  async run(_args, ctx) {
    const at = performance.now();
    const waiter = starts.get(ctx.taskId);
    if (typeof waiter === 'function') {
      starts.delete(ctx.taskId);
      waiter(at);
    } else {
      starts.set(ctx.taskId, at);
    }
    return textResult('ok');
  },
});

const store = openSqliteTaskStore({ path: join(options.dir, 'tasks.db') });
// The commit instant is when the store publishes the task's `created` event (right after COMMIT). The worker may
// start the tool before the create resolves (it counts the first run at creation when a slot is free), so the
// moment the caller regains control would come after the pick-up it should precede.
const commits = new Map();
store.onEvent((event) => {
  if (event.kind === 'created') commits.set(event.taskId, performance.now());
});
// Every call must become a task: the inline grace (issue 27 §5) would answer a finished probe inline.
const server = await createTasksServer({ tools: [probe], store, secret: randomBytes(32), limits: { inlineGraceMs: 0 } });
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
const toolName = probe.name;
async function createTask() {
  const outcome = await server.service.calls.callTool(caller, await server.service.calls.planCall(caller, { name: toolName, progressToken: null }));
  if (outcome.kind !== 'task') throw new Error(`no task: ${JSON.stringify(outcome)}`);
  return outcome.task;
}

const result = await closedLoop({
  clients: options.clients,
  setup: () => undefined,
  iteration: async (_state, sample) => {
    const called = performance.now();
    const record = await createTask();
    const committed = commits.get(record.taskId);
    commits.delete(record.taskId);
    const started = await runStarted(record.taskId);
    sample('fromCommit', started - committed);
    sample('fromCall', started - called);
  },
  warmupMs: options.warmupMs,
  durationMs: options.durationMs,
  server: thisProcess,
});
await server.close();
await store.close();
process.stdout.write(`${JSON.stringify(result)}\n`);
