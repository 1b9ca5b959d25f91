// The task row a benchmark creates at the TaskStore port: exactly what the runtime writes for a v2 `tools/call noop`
// (see TaskRuntime.createTask), with a fresh 128-bit id.
import { randomBytes } from 'node:crypto';

import { closedLoop, thisProcess } from './load.mjs';

const capabilities = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

export function noopTask() {
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

/**
 * Closed-loop creates of {@link noopTask} at `store` by `options.clients` creators for the run's warm-up and
 * duration, then closes the store. Adds `operationsPerCommit`: the average batch the store's group commit formed
 * over the whole run (warm-up included).
 */
export async function measureCreates(store, options) {
  const before = store.stats();
  const result = await closedLoop({
    clients: options.clients,
    setup: () => undefined,
    iteration: async () => {
      await store.create(noopTask());
    },
    warmupMs: options.warmupMs,
    durationMs: options.durationMs,
    server: thisProcess,
  });
  const after = store.stats();
  await store.close();
  return { ...result, operationsPerCommit: (after.operations - before.operations) / Math.max(1, after.commits - before.commits) };
}
