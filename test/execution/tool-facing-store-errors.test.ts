/**
 * What a tool learns of a task store failure in its context calls (stop 42): its code and what failed, never the
 * operator's message — the driver's detail (host and port, constraint names) or the remedy ("add its key to
 * MCP_TASKS_ENCRYPTION_KEYS_OLD", "restart the process") — nor the driver error as `cause`. A tool hands what it
 * catches on: to its result, to a model, and an upstream server's tool (run in process by the gateway) to that
 * server. The in-process executor here; the thread crossing is in thread-channels.test.ts.
 */

import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { StoreError } from '../../src/core/store-error.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { captureLogger } from '../helpers/capture-logger.js';
import { serverOnWrappedStore, terminal } from '../helpers/wrapped-store-server.js';

describe("a tool's context call that fails in the task store (in process)", () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('gets the code and what failed, without cause; the log has the whole error', async () => {
    const fault = new StoreError('fault', 'Task store failed to write tool state: duplicate key value violates unique constraint "tool_state_pkey"', {
      cause: new Error('driver error'),
      requestorMessage: 'Task store failed to write tool state',
    });
    const down = new StoreError('unavailable', 'Task store unavailable: cannot read tool state (connect ECONNREFUSED 10.20.30.40:5432)', {
      cause: new Error('connect ECONNREFUSED 10.20.30.40:5432'),
    });
    const sealed = new StoreError('fault', 'cannot decrypt task data: key id 0a1b is not configured (add its key to MCP_TASKS_ENCRYPTION_KEYS_OLD)', {
      requestorMessage: "This server cannot decrypt this task's stored data",
    });
    const overrides = {
      putToolState: async () => {
        throw fault;
      },
      getToolState: async () => {
        throw down;
      },
      lookupStep: async () => {
        throw sealed;
      },
    };
    const tool = defineTool({
      name: 'reports_store_errors',
      description: 'reports what its context calls threw',
      execution: 'task-optional',
      inputSchema: z.object({}),
      async run(_args, ctx) {
        const seen: unknown[] = [];
        for (const call of [() => ctx.ownerState.put('k', 1), () => ctx.ownerState.get('k'), () => ctx.step('s', () => 1)])
          await call().then(
            () => seen.push(null),
            (error: unknown) => {
              const { name, code, message, cause } = error as StoreError;
              seen.push({ name, code, message, cause: (cause as Error | undefined)?.message });
            },
          );
        return textResult(JSON.stringify(seen));
      },
    });
    const { logger, lines } = captureLogger();
    const { real, server, call, close } = await serverOnWrappedStore([tool], () => overrides, { logger });
    cleanups.push(close);
    const done = await terminal(server, await call(tool.name));
    expect(done.status).toBe('completed');
    const stored = await real.getOutcome(done.taskId);
    const text = stored?.kind === 'result' ? ((stored.result as { content: Array<{ text: string }> }).content[0]?.text ?? '') : '';
    expect(text).not.toMatch(/tool_state_pkey|10\.20\.30\.40|MCP_TASKS_ENCRYPTION_KEYS_OLD|driver error|0a1b/);
    const reported = JSON.parse(text) as unknown[];
    expect(reported).toEqual([
      { name: 'StoreError', code: 'fault', message: 'Task store failed to write tool state' },
      { name: 'StoreError', code: 'unavailable', message: 'Task store unavailable' },
      { name: 'StoreError', code: 'fault', message: "This server cannot decrypt this task's stored data" },
    ]);
    expect(lines.filter((line) => line.message === "a tool's context operation failed in the task store").map((line) => line.fields.err)).toEqual([
      fault,
      down,
      sealed,
    ]);
  });
});
