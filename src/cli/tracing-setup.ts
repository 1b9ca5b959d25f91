import { TasksTracing } from '../ops/tracing.js';
import { startOtlpTracing } from '../ops/tracing-sdk.js';
import type { ResolvedConfig } from './config/resolve.js';
import { UsageError } from './usage-error.js';

/** The tracing of a `serve` or `worker` process. */
export interface ProcessTracing {
  tracing: TasksTracing;
  /** One line for the start-up banner. */
  describe: string;
  /** Flush batched spans and unregister the SDK (a no-op without tracing). */
  shutdown(): Promise<void>;
}

/**
 * Register the OTLP trace SDK when `tracing.otlpEndpoint` is set (`--otlp-endpoint`, `OTEL_EXPORTER_OTLP_ENDPOINT`);
 * without it no SDK is registered and spans are no-ops, but a request's `_meta.traceparent` is still stored with
 * its task, so a worker that traces links its run to the caller's span.
 * @throws UsageError when tracing is configured and the SDK packages are not installed.
 */
export async function startProcessTracing(resolved: ResolvedConfig, role: 'api' | 'worker' | 'serve'): Promise<ProcessTracing> {
  const endpoint = resolved.config.tracing?.otlpEndpoint;
  if (endpoint === undefined) return { tracing: await TasksTracing.load(), describe: 'off (--otlp-endpoint URL exports traces over OTLP/HTTP)', shutdown: async () => {} };
  const sdk = await startOtlpTracing({ endpoint, serviceName: resolved.config.tracing?.serviceName ?? 'mcp-tasks', role }).catch((error: unknown) => {
    throw new UsageError((error as Error).message);
  });
  return { tracing: await TasksTracing.load(), describe: `OTLP/HTTP ${sdk.url}`, shutdown: () => sdk.shutdown() };
}
