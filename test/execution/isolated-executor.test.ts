/**
 * Issue 22: the isolated executor (real piscina threads, loading real tool modules from `dist/`) loads the tools in
 * a warm pool when it starts, gives runs only to threads that loaded them, and never terminates a thread that is
 * loading them. The end-to-end counterparts through `mcp-tasks serve` are in test/e2e/isolation.test.ts.
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { ExecutionHost, ExecutionRequest } from '../../src/core/executor.js';
import { IsolatedExecutor, type IsolatedExecutorOptions } from '../../src/execution/isolated-executor.js';
import { ensureBuilt } from '../cli/support.js';
import { captureLogger } from '../helpers/capture-logger.js';
import { eventually, runNotes } from '../helpers/run-notes.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const ISOLATION_TOOLS = pathToFileURL(resolve(import.meta.dirname, '../fixtures/isolation-tools.mjs')).href;
const THREAD_LOAD_TOOLS = pathToFileURL(resolve(import.meta.dirname, '../fixtures/thread-load-tools.mjs')).href;

/** A host that answers nothing a test tool needs and records when the run started. */
function testHost(): ExecutionHost & { startedAt: number | undefined } {
  const host = {
    startedAt: undefined as number | undefined,
    started() {
      host.startedAt = Date.now();
    },
    setStatus() {},
    progress() {},
    log() {},
    getStep: async () => undefined,
    putStep: async () => {},
    getOwnerState: async () => undefined,
    putOwnerState: async () => {},
    elicit: async () => ({ answers: [] }),
    openOperation: async () => {
      throw new Error('no ledger here');
    },
    settleOperation: async () => undefined,
  };
  return host;
}

function request(toolName: string, args: Record<string, unknown> = {}): ExecutionRequest {
  return { taskId: null, toolName, arguments: args as ExecutionRequest['arguments'], confinement: { roots: [], deniedPaths: [] }, logFields: { tool: toolName } };
}

describe('IsolatedExecutor (issue 22)', () => {
  ensureBuilt();
  const temp = makeTempDir('mcp-tasks-isolated-');
  const executors: IsolatedExecutor[] = [];
  afterEach(async () => {
    for (const executor of executors.splice(0)) await executor.close();
  });
  afterAll(() => temp.remove());

  const start = (module: string, options: Partial<IsolatedExecutorOptions> = {}) => {
    const { logger, lines } = captureLogger();
    const executor = new IsolatedExecutor({ sources: [{ module }], moduleOptions: { roots: [], writableRoots: [], deniedPaths: [] }, maxThreads: 2, minThreads: 1, abortGraceMs: 50, logger, ...options });
    executors.push(executor);
    return { executor, lines };
  };

  it('close() while threads still load the tools waits for them to finish loading before it ends them', async () => {
    const loads = join(temp.dir, 'close-loads.log');
    const { executor } = start(THREAD_LOAD_TOOLS, { minThreads: 2, env: { ...(process.env as Record<string, string>), ISOLATION_TEST_LOAD_MS: '600', ISOLATION_TEST_LOAD_LOG: loads } });
    executors.splice(executors.indexOf(executor), 1);
    await new Promise((r) => setTimeout(r, 100));
    await executor.close();
    const closedAt = Date.now();
    // Both threads got to the end of their loading: none was terminated in the middle of it.
    expect(runNotes<{ event: string; at: number }>(loads).filter((n) => n.event === 'loaded' && n.at <= closedAt)).toHaveLength(2);
  });

  it('a thread that failed to load the tools gets no run while a warm thread exists (runs wait for the warm one)', async () => {
    const log = join(temp.dir, 'failed-once.log');
    const { executor } = start(THREAD_LOAD_TOOLS, { minThreads: 2, env: { ...(process.env as Record<string, string>), ISOLATION_TEST_LOAD_FAILS_ONCE: join(temp.dir, 'failed-once.marker') } });
    await eventually('one thread warm and one failed', () => {
      const threads = executor.readiness().threads;
      return threads?.warm === 1 && threads.failed === 1;
    }, 30_000);
    const outcomes = await Promise.all(Array.from({ length: 6 }, () => executor.execute(request('quick', { log, ms: 20 }), testHost(), new AbortController().signal)));
    expect(outcomes.map((outcome) => outcome.kind)).toEqual(outcomes.map(() => 'returned'));
    expect(executor.readiness()).toMatchObject({ ready: false, error: 'Error: this tool module fails to load in the first thread only' });
  });

  it('warm(): the pool loads the tools in its minThreads threads when it starts; readiness reports them', async () => {
    const { executor } = start(ISOLATION_TOOLS, { minThreads: 2, maxThreads: 3 });
    await executor.warm(30_000);
    const readiness = executor.readiness();
    expect(readiness).toMatchObject({ ready: true, mode: 'isolated', threads: { warm: 2, loading: 0, failed: 0, min: 2, max: 3 } });
    expect(readiness.warmUpMs).toBeGreaterThan(0);
  });

  it('warm() rejects with the loader error when the tool modules fail to load in a thread; readiness is false', async () => {
    const { executor } = start(THREAD_LOAD_TOOLS, { env: { ...(process.env as Record<string, string>), ISOLATION_TEST_LOAD_FAILS: '1' } });
    await expect(executor.warm(30_000)).rejects.toThrow(/failed to load in a worker thread: Error: this tool module refuses to load in a worker thread/);
    expect(executor.readiness()).toMatchObject({ ready: false, threads: { failed: 1 } });
    // A run does not wait for a thread that cannot serve it: it fails with that reason.
    const outcome = await executor.execute(request('quick', { log: join(temp.dir, 'never.log') }), testHost(), new AbortController().signal);
    expect(outcome).toEqual({ kind: 'crashed', message: "Tool quick is unavailable: the tool modules failed to load in the executor's thread" });
  });
});
