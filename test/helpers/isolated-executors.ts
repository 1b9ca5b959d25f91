import { afterEach } from 'vitest';

import type { ExecutionRequest } from '../../src/core/executor.js';
import type { ToolSource } from '../../src/core/tool-source.js';
import { IsolatedExecutor, type IsolatedExecutorOptions } from '../../src/execution/isolated-executor.js';
import { type CapturedLine, captureLogger } from './capture-logger.js';

/** Options of a test's executors: its tool `sources`, and any test default in place of {@link isolatedExecutors}'. */
type ExecutorDefaults = Partial<IsolatedExecutorOptions> & { sources: ToolSource[] };

/**
 * The isolated executors of one test file, closed after each test (register inside its `describe`): `create` one
 * (2 threads, an abort grace of 50 ms and a captured logger unless `defaults` or `options` say otherwise), or
 * `start` one, warmed. `executors` holds those not closed yet (a test may close one itself and take it out).
 */
export function isolatedExecutors(defaults: ExecutorDefaults): {
  executors: IsolatedExecutor[];
  create(options?: Partial<IsolatedExecutorOptions>): { executor: IsolatedExecutor; lines: CapturedLine[] };
  start(options?: Partial<IsolatedExecutorOptions>): Promise<IsolatedExecutor>;
} {
  const executors: IsolatedExecutor[] = [];
  afterEach(async () => {
    for (const executor of executors.splice(0)) await executor.close();
  });
  const create = (options: Partial<IsolatedExecutorOptions> = {}) => {
    const { logger, lines } = captureLogger();
    const executor = new IsolatedExecutor({
      moduleOptions: { roots: [], writableRoots: [], deniedPaths: [] },
      maxThreads: 2,
      minThreads: 2,
      abortGraceMs: 50,
      logger,
      ...defaults,
      ...options,
    });
    executors.push(executor);
    return { executor, lines };
  };
  return {
    executors,
    create,
    async start(options = {}) {
      const { executor } = create(options);
      await executor.warm(30_000);
      return executor;
    },
  };
}

/** A run of `toolName` with `args`, without a task, confined to nothing, as the executor tests hand it over. */
export function request(toolName: string, args: Record<string, unknown> = {}): ExecutionRequest {
  return {
    taskId: null,
    toolName,
    arguments: args as ExecutionRequest['arguments'],
    confinement: { roots: [], deniedPaths: [] },
    logFields: { tool: toolName },
  };
}
