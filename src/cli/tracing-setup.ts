import type { RunTracer } from '../core/run-tracer.js';
import { TasksTracing } from '../ops/tracing.js';
import { startOtlpTracing } from '../ops/tracing-sdk.js';
import type { TaskServiceHook } from '../service/hooks.js';
import type { ResolvedConfig } from './config/resolve.js';
import { UsageError } from './usage-error.js';

/** The tracing of a `serve` or `worker` process. */
export interface ProcessTracing {
  /** The request-span hook (none without tracing). */
  hooks: TaskServiceHook[];
  /** The run tracer of the worker (none without tracing: no `@trace` read per run). */
  runTracer?: RunTracer;
  /** One line for the start-up banner. */
  describe: string;
  /** Flush batched spans and unregister the SDK (a no-op without tracing). */
  shutdown(): Promise<void>;
}

/**
 * Register the OTLP trace SDK when `tracing.otlpEndpoint` is set (`--otlp-endpoint`, `OTEL_EXPORTER_OTLP_ENDPOINT`);
 * without it nothing is traced, but the service still stores a request's `_meta.traceparent` with its task, so a
 * worker that traces links its run to the caller's span.
 * @throws UsageError when tracing is configured and the SDK packages are not installed.
 */
export async function startProcessTracing(resolved: ResolvedConfig, role: 'api' | 'worker' | 'serve'): Promise<ProcessTracing> {
  const endpoint = resolved.config.tracing?.otlpEndpoint;
  if (endpoint === undefined) return { hooks: [], describe: 'off (--otlp-endpoint URL exports traces over OTLP/HTTP)', shutdown: async () => {} };
  const sdk = await startOtlpTracing({ endpoint, serviceName: resolved.config.tracing?.serviceName ?? 'mcp-tasks', role }).catch((error: unknown) => {
    throw new UsageError((error as Error).message);
  });
  const tracing = await TasksTracing.load();
  return { hooks: [tracing.serviceHook()], runTracer: tracing.runTracer(), describe: `OTLP/HTTP ${sdk.url}`, shutdown: () => sdk.shutdown() };
}
