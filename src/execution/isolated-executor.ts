import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { TasksError } from '../core/errors.js';
import { StoreError } from '../core/store-error.js';
import type { ExecutionHost, ExecutionOutcome, ExecutionRequest, Executor } from '../core/executor.js';
import type { Logger } from '../core/logger.js';
import type { JsonValue } from '../core/task.js';
import type { OperationSettlement } from '../core/ledger.js';
import type { ElicitRequest, OperationSpec } from '../core/tool.js';
import type { ToolModuleOptions, ToolSource } from '../core/tool-source.js';
import type { CrossedError, HostMethod, HostReply, ThreadMessage } from './isolated-messages.js';
import type { ThreadTask } from './isolated-thread.js';

/** Options of an {@link IsolatedExecutor}. */
export interface IsolatedExecutorOptions {
  /** Where the threads load the tools from: the same sources (and options) the process loaded its registry from. */
  sources: readonly ToolSource[];
  moduleOptions: ToolModuleOptions;
  /** Threads at most (one run per thread): the worker's concurrency plus room for inline calls. */
  maxThreads: number;
  /**
   * How long a run whose signal was aborted (cancel, runtime limit, TTL, lost lease, drain) may take to return
   * before its thread is terminated (ms). @defaultValue `DEFAULT_LIMITS.abortGraceMs`
   */
  abortGraceMs: number;
  logger: Logger;
}

/**
 * The thread module: next to this file when running the build; from `dist/` when this module runs as TypeScript
 * source (the test runner), since a worker thread cannot load `.ts`.
 */
function threadModule(): string {
  const beside = new URL('./isolated-thread.js', import.meta.url);
  if (existsSync(fileURLToPath(beside))) return beside.href;
  return new URL('../../dist/execution/isolated-thread.js', import.meta.url).href;
}

/**
 * The {@link Executor} that runs each tool call in a worker thread of a `piscina` pool (issue 11 item 2): the event
 * loop that renews leases, delivers cancellation and answers HTTP never waits on tool code, however long a tool
 * computes or blocks. Threads load the tools from their {@link ToolSource}s; `ctx` operations are messages to the
 * host (see `isolated-messages.ts`). When the run's signal aborts, the tool sees `ctx.signal` abort; if it has not
 * returned `abortGraceMs` later, its thread is terminated and the run ends `aborted` — the caller settles the task
 * exactly as it would have for a tool that stopped in time.
 */
export class IsolatedExecutor implements Executor {
  private readonly pool: Piscina<ThreadTask, ExecutionOutcome>;
  /** Runs whose thread was terminated after the grace period (for tests and metrics). */
  terminated = 0;

  constructor(private readonly options: IsolatedExecutorOptions) {
    this.pool = new Piscina({ filename: threadModule(), minThreads: 1, maxThreads: Math.max(1, options.maxThreads), idleTimeout: 60_000 });
  }

  async execute(request: ExecutionRequest, host: ExecutionHost, signal: AbortSignal): Promise<ExecutionOutcome> {
    if (signal.aborted) return { kind: 'aborted', reason: String(signal.reason) };
    const { port1, port2 } = new MessageChannel();
    const terminate = new AbortController();
    let grace: NodeJS.Timeout | undefined;
    const onAbort = (): void => {
      port1.postMessage({ op: 'abort', reason: String(signal.reason) } satisfies HostReply);
      grace = setTimeout(() => terminate.abort('abort grace elapsed'), this.options.abortGraceMs);
      grace.unref();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    port1.on('message', (message: ThreadMessage) => this.answer(message, host, port1));
    const task: ThreadTask = { sources: [...this.options.sources], moduleOptions: this.options.moduleOptions, request, port: port2 };
    try {
      const outcome = await this.pool.run(task, { transferList: [port2], signal: terminate.signal });
      return signal.aborted ? { kind: 'aborted', reason: String(signal.reason) } : outcome;
    } catch (error) {
      if (terminate.signal.aborted) {
        this.terminated += 1;
        this.options.logger.warn({ ...request.logFields, reason: String(signal.reason), abortGraceMs: this.options.abortGraceMs }, 'tool ignored its abort signal; its thread was terminated');
        return { kind: 'aborted', reason: String(signal.reason) };
      }
      if (signal.aborted) return { kind: 'aborted', reason: String(signal.reason) };
      // The thread died under the tool (a crash, an out-of-memory, process.exit in the tool): a crash of the run.
      this.options.logger.error({ ...request.logFields, err: error }, 'tool thread failed');
      return { kind: 'crashed', message: `Internal error in tool ${request.toolName}` };
    } finally {
      clearTimeout(grace);
      signal.removeEventListener('abort', onAbort);
      port1.close();
    }
  }

  /** Answer one context operation of a running tool on `port`. */
  private answer(message: ThreadMessage, host: ExecutionHost, port: MessagePort): void {
    if (message.op === 'setStatus') host.setStatus(message.message);
    else if (message.op === 'progress') host.progress(message.done, message.total, message.message);
    else if (message.op === 'log') host.log(message.entry);
    else {
      const [first, second] = message.args;
      const operations: Record<HostMethod, () => Promise<unknown>> = {
        getStep: () => host.getStep(String(first)),
        putStep: () => host.putStep(String(first), second as JsonValue),
        getOwnerState: () => host.getOwnerState(String(first)),
        putOwnerState: () => host.putOwnerState(String(first), second as JsonValue),
        elicit: () => host.elicit(first as unknown as readonly ElicitRequest[]),
        openOperation: () => host.openOperation(first as unknown as OperationSpec),
        settleOperation: () => host.settleOperation(String(first), second as unknown as Omit<OperationSettlement, 'now'>),
      };
      const work = Promise.resolve().then(operations[message.method]);
      work.then(
        (value) => port.postMessage({ op: 'reply', id: message.id, ok: true, value: value as JsonValue | undefined } satisfies HostReply),
        (error: unknown) => port.postMessage({ op: 'reply', id: message.id, ok: false, error: crossed(error) } satisfies HostReply),
      );
    }
  }

  /** End the pool's threads (runs in progress were aborted by their owners first). */
  async close(): Promise<void> {
    await this.pool.destroy();
  }
}

function crossed(error: unknown): CrossedError {
  if (error instanceof TasksError) return { message: error.message, code: error.code, ...(error.data === undefined ? {} : { data: error.data }) };
  if (error instanceof StoreError) return { message: error.message, storeCode: error.code };
  return { message: error instanceof Error ? error.message : String(error) };
}
