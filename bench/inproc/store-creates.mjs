// P3: durable creates at the TaskStore port, N concurrent creators in a closed loop, in this process (no HTTP), so
// the figure is what the store's group commit makes of the device's sync rate.
// Run by the driver: node --expose-gc bench/inproc/store-creates.mjs '{"dir", "clients", "warmupMs", "durationMs"}'
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { openSqliteTaskStore } from '../../dist/index.js';
import { closedLoop, thisProcess } from '../lib/load.mjs';

const options = JSON.parse(process.argv[2]);
const store = openSqliteTaskStore({ path: join(options.dir, 'tasks.db') });
const capabilities = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

/** The row the runtime writes for a v2 `tools/call noop` (see TaskRuntime.createTask). */
function newTask() {
  const now = Date.now();
  return {
    taskId: randomBytes(16).toString('base64url'),
    ownerKey: 'anonymous',
    generation: 'v2',
    protocolVersion: '2026-07-28',
    toolName: 'noop',
    arguments: {},
    clientCapabilities: capabilities,
    progressToken: null,
    statusMessage: null,
    createdAt: now,
    ttlMs: 3_600_000,
    pollIntervalMs: 1000,
    leaseOwner: 'bench',
    leaseMs: 15_000,
  };
}

const before = store.stats();
const result = await closedLoop({
  clients: options.clients,
  setup: () => undefined,
  iteration: async () => {
    await store.create(newTask());
  },
  warmupMs: options.warmupMs,
  durationMs: options.durationMs,
  server: thisProcess,
});
const after = store.stats();
await store.close();
// Commits over the whole run (warm-up included): the average batch the group commit formed.
const operationsPerCommit = (after.operations - before.operations) / Math.max(1, after.commits - before.commits);
process.stdout.write(`${JSON.stringify({ ...result, operationsPerCommit })}\n`);
