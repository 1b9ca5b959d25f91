// P6: durable creates at the TaskStore port on PostgreSQL, N concurrent creators in a closed loop, in this process
// (no HTTP): what the store's group commit and multi-row INSERTs make of the server's commit rate.
// Run by the driver: node --expose-gc bench/inproc/pg-store-creates.mjs '{"url", "clients", "warmupMs", "durationMs", "maxBatchSize"?}'
import { randomBytes } from 'node:crypto';
import { openPostgresTaskStore } from 'mcp-tasks/postgres';
import { closedLoop, thisProcess } from '../lib/load.mjs';

const options = JSON.parse(process.argv[2]);
const store = await openPostgresTaskStore({ url: options.url, poolSize: 8, ...(options.maxBatchSize ? { maxBatchSize: options.maxBatchSize, maxInFlightBatches: options.clients } : {}) });
const capabilities = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

/** The row the runtime writes for a v2 `tools/call noop` (see TaskRuntime.createTask). */
function newTask() {
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
    createdAt: Date.now(),
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
const operationsPerCommit = (after.operations - before.operations) / Math.max(1, after.commits - before.commits);
process.stdout.write(`${JSON.stringify({ ...result, operationsPerCommit })}\n`);
