import { newTaskId } from '../../src/core/ids.js';
import type { NewTask } from '../../src/core/task.js';

/** A v2 task of the anonymous owner with a fresh id, created now, unlimited retention; `overrides` applied. */
export function newTaskInput(overrides: Partial<NewTask> = {}): NewTask {
  const now = Date.now();
  return {
    taskId: newTaskId(),
    ownerKey: 'anonymous',
    generation: 'v2',
    protocolVersion: '2026-07-28',
    toolName: 'test',
    arguments: {},
    clientCapabilities: {},
    progressToken: null,
    statusMessage: null,
    createdAt: now,
    ttlMs: null,
    pollIntervalMs: 100,
    leaseOwner: null,
    leaseMs: null,
    ...overrides,
  };
}
