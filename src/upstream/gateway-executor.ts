import type { ExecutionHost, ExecutionOutcome, ExecutionRequest, Executor, ExecutorReadiness, UpstreamStatus } from '../core/executor.js';
import type { AnyToolDefinition } from '../core/tool.js';
import { ToolRegistry } from '../core/tool-registry.js';
import { InProcessExecutor } from '../execution/in-process-executor.js';
import { callerOwner } from './caller-identity.js';

/**
 * The executor of a process with upstream tools (issue 28): a call of an upstream tool runs on this process's
 * event loop (it is I/O on the upstream connection this process owns, see `connection.ts`), every other tool through
 * the configured executor (isolated threads by default). `readiness` is the configured executor's, with the
 * upstreams' states added (reported, never a condition).
 */
export class GatewayExecutor implements Executor {
  private readonly upstream: InProcessExecutor;
  private readonly names: ReadonlySet<string>;

  constructor(
    private readonly base: Executor,
    tools: readonly AnyToolDefinition[],
    private readonly statuses: () => UpstreamStatus[],
  ) {
    this.upstream = new InProcessExecutor(new ToolRegistry(tools));
    this.names = new Set(tools.map((tool) => tool.name));
  }

  execute(request: ExecutionRequest, host: ExecutionHost, signal: AbortSignal, withdraw?: AbortSignal): Promise<ExecutionOutcome> {
    if (!this.names.has(request.toolName)) return this.base.execute(request, host, signal, withdraw);
    // The caller's owner key reaches the forwarded call (for upstreams that get it) without entering the tool's ctx.
    return callerOwner.run(request.ownerKey, () => this.upstream.execute(request, host, signal, withdraw));
  }

  /** Closes the configured executor; the upstream connections are closed by their owner (`UpstreamGateway.close`). */
  close(): Promise<void> {
    return this.base.close();
  }

  readiness(): ExecutorReadiness {
    return { ...(this.base.readiness?.() ?? { ready: true, mode: 'in-process' }), upstreams: this.statuses() };
  }
}
