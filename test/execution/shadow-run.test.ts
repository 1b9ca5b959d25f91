/**
 * The shadow watch of a run while its outcome is written (stop 42): from the tool's end to that write's commit the
 * task still reads `working`; a job that ended with the tool is no difference then, so no `running` check is made
 * in that window, and the final comparison follows the write. Control: a job that disagrees is still reported.
 */

import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { defineTool, type ShadowJobState, textResult } from '../../src/core/tool.js';
import type { SqliteTaskStore } from '../../src/store/sqlite/index.js';
import { QUIET_LIMITS } from '../helpers/quiet-limits.js';
import { serverOnWrappedStore, terminal } from '../helpers/wrapped-store-server.js';

describe('shadow mode while a run writes its outcome', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** One run whose job ends as `jobEnds` as the tool ends as `toolEnds`, its outcome written 400 ms late; the checks. */
  async function run(toolEnds: 'failed' | 'completed', jobEnds: ShadowJobState): Promise<string[]> {
    let job: ShadowJobState = 'working';
    const checks: string[] = [];
    const tool = defineTool({
      name: 'migrating',
      description: 'waits for its job',
      execution: 'task-optional',
      inputSchema: z.object({}),
      shadow: { submit: async () => 'j', status: async () => job },
      async run(_args, ctx) {
        ctx.shadow.observe('j');
        await new Promise((resolve) => setTimeout(resolve, 100));
        job = jobEnds;
        if (toolEnds === 'failed') throw new Error('the job failed');
        return textResult('done');
      },
    });
    // A slow outcome write (a busy store, an fsync, a row lock): 400 ms, ten poll intervals.
    const { server, call, close } = await serverOnWrappedStore(
      [tool],
      (real) => ({
        transition: async (taskId: string, request: Parameters<SqliteTaskStore['transition']>[1]) => {
          if (request.to === 'failed' || request.to === 'completed') await new Promise((resolve) => setTimeout(resolve, 400));
          return real.transition(taskId, request);
        },
      }),
      {
        limits: { ...QUIET_LIMITS, claimIntervalMs: 60_000 },
        shadow: { tools: ['migrating'], intervalMs: 40, settleChecks: 2 },
        workerObserver: { shadowChecked: (_tool, result) => void checks.push(result) },
      },
    );
    cleanups.push(close);
    expect((await terminal(server, await call('migrating'))).status).toBe(toolEnds);
    // The final comparison follows the write.
    await expect.poll(() => checks.length).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 200));
    return checks;
  }

  it('a job that failed as its tool failed: no mismatch while the write is in flight', async () => {
    expect(await run('failed', 'failed')).not.toContain('mismatch');
  });

  it('control: a job that failed while its tool completed is a mismatch', async () => {
    expect(await run('completed', 'failed')).toContain('mismatch');
  });
});
