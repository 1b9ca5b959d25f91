import type { ExecutionHost, ExecutionOutcome, ExecutionRequest, Executor } from '../core/executor.js';
import type { Logger } from '../core/logger.js';
import type { WorkerObserver } from '../core/worker-observer.js';

/**
 * The bound on a tool result's `structuredContent` (issue 27 §2, `limits.maxStructuredContentBytes`). Clients such
 * as Claude Code hand the model `JSON.stringify(structuredContent)` instead of the text report when it is present,
 * and refuse or cut what is too large: `structuredContent` is for the summary a program needs (counts, top items,
 * ids), bulk detail goes behind an opt-in argument or a resource (docs/guides/writing-tools.md). A result over the
 * bound is delivered unchanged — the tool's author decides what to drop — but logged as a warning and counted
 * (`mcp_tasks_structured_content_oversized_total`), for task runs and inline calls alike.
 */
export class StructuredContentBound implements Executor {
  constructor(
    private readonly inner: Executor,
    private readonly options: { maxBytes: number; logger: Logger; observer?: WorkerObserver | undefined },
  ) {}

  async execute(request: ExecutionRequest, host: ExecutionHost, signal: AbortSignal, withdraw?: AbortSignal): Promise<ExecutionOutcome> {
    const outcome = await this.inner.execute(request, host, signal, withdraw);
    if (outcome.kind === 'returned' && outcome.result.structuredContent !== undefined) {
      const bytes = Buffer.byteLength(JSON.stringify(outcome.result.structuredContent));
      if (bytes > this.options.maxBytes) {
        const { maxBytes, logger, observer } = this.options;
        logger.warn(
          { tool: request.toolName, taskId: request.taskId, bytes, maxBytes },
          'structuredContent over --structured-content-max-bytes: clients such as Claude Code give it to the model instead of the text; keep it to a summary',
        );
        try {
          observer?.structuredContentOversized?.(request.toolName, bytes);
        } catch {
          // A metric never fails the run it measures.
        }
      }
    }
    return outcome;
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  readiness(): ReturnType<NonNullable<Executor['readiness']>> {
    return this.inner.readiness?.() ?? { ready: true, mode: 'in-process' };
  }
}
