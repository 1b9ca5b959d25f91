/**
 * Registers the OpenTelemetry trace SDK of an mcp-tasks process (`serve`, `worker`) when tracing is configured:
 * `BasicTracerProvider` (`@opentelemetry/sdk-trace-base` 2.x) with a `BatchSpanProcessor` and the OTLP/HTTP JSON
 * exporter (`@opentelemetry/exporter-trace-otlp-http` 0.223.x), all loaded lazily — a process without tracing never
 * loads them, and they are optional peer dependencies of the package.
 */

import type * as OtelApi from '@opentelemetry/api';
import type * as OtelOtlp from '@opentelemetry/exporter-trace-otlp-http';
import type * as OtelResources from '@opentelemetry/resources';
import type * as OtelSdk from '@opentelemetry/sdk-trace-base';

/** What {@link startOtlpTracing} is configured with. */
export interface OtlpTracingOptions {
  /** OTLP/HTTP base URL (`OTEL_EXPORTER_OTLP_ENDPOINT` semantics): spans go to `<endpoint>/v1/traces`. */
  endpoint: string;
  /** `service.name` of the resource. */
  serviceName: string;
  /** `mcp_tasks.role` resource attribute: `api`, `worker` or `serve` (both). */
  role: string;
  /** Export batch delay in ms. @defaultValue `OTEL_BSP_SCHEDULE_DELAY`, else 5000 */
  scheduledDelayMs?: number;
}

/** A registered SDK: `shutdown` flushes the spans still batched and unregisters it. */
export interface OtlpTracing {
  /** The URL spans are posted to. */
  readonly url: string;
  shutdown(): Promise<void>;
}

/** The OTLP traces path under the base endpoint (OTLP/HTTP specification). */
const TRACES_PATH = '/v1/traces';

/**
 * Register a global tracer provider exporting to `options.endpoint`.
 * @throws Error naming the packages to install when the SDK packages are absent.
 */
export async function startOtlpTracing(options: OtlpTracingOptions): Promise<OtlpTracing> {
  let modules: [typeof OtelApi, typeof OtelSdk, typeof OtelOtlp, typeof OtelResources];
  try {
    modules = await Promise.all([
      import('@opentelemetry/api'),
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
    ]);
  } catch (error) {
    throw new Error(
      `tracing (--otlp-endpoint / OTEL_EXPORTER_OTLP_ENDPOINT) needs the OpenTelemetry SDK: npm install @opentelemetry/api@1.9 @opentelemetry/sdk-trace-base@2.12 @opentelemetry/exporter-trace-otlp-http@0.223 @opentelemetry/resources@2.12 (${(error as Error).message})`,
    );
  }
  const [api, sdk, otlp, resources] = modules;
  const url = `${options.endpoint.replace(/\/+$/, '')}${TRACES_PATH}`;
  const fromEnv = Number(process.env.OTEL_BSP_SCHEDULE_DELAY);
  const scheduledDelayMillis = options.scheduledDelayMs ?? (Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv : 5000);
  const provider = new sdk.BasicTracerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': options.serviceName, 'mcp_tasks.role': options.role }),
    spanProcessors: [new sdk.BatchSpanProcessor(new otlp.OTLPTraceExporter({ url }), { scheduledDelayMillis })],
  });
  api.trace.setGlobalTracerProvider(provider);
  return {
    url,
    async shutdown() {
      await provider.shutdown();
      api.trace.disable();
    },
  };
}
