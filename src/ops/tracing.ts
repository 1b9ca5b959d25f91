import type * as OtelApi from '@opentelemetry/api';

import type { RunTrace, RunTracer } from '../core/run-tracer.js';
import { formatTraceparent, parseTraceparent, type TraceCarrier } from '../core/trace-context.js';
import type { CallOutcome } from '../service/calls/call-service.js';
import type { TaskServiceHook } from '../service/hooks.js';

/**
 * OpenTelemetry traces of one mcp-tasks process on `@opentelemetry/api` (an optional peer dependency, loaded
 * lazily: without it, or without a registered SDK, every span is a no-op). Two seams:
 * - {@link TasksTracing.serviceHook}: a `SERVER` span per `tools/call` (child of the request's `_meta.traceparent`
 *   when sent, both generations); a created task stores that span's context (`@trace` step);
 * - {@link TasksTracing.runTracer}: a root span per run in whichever worker runs the task, *linked* to the request
 *   span, with child spans for `ctx.step` and `ctx.operation`.
 * Attributes are bounded: tool, generation, status, attempt, step name, effect; the task id only on spans.
 */

/** Instrumentation scope name of every span. */
export const TRACER_NAME = 'mcp-tasks';

/** Attribute names (the `mcp_tasks.` namespace; `mcp.tool.name` as MCP semantic conventions name it). */
const A = {
  tool: 'mcp.tool.name',
  generation: 'mcp_tasks.generation',
  taskId: 'mcp_tasks.task_id',
  outcome: 'mcp_tasks.outcome',
  status: 'mcp_tasks.status',
  attempt: 'mcp_tasks.attempt',
  step: 'mcp_tasks.step',
  replayed: 'mcp_tasks.replayed',
  effect: 'mcp_tasks.operation.effect',
  operationKey: 'mcp_tasks.operation.key',
} as const;

/** Operation statuses that end an operation span with an error. */
const FAILED_OPERATIONS = new Set(['failed', 'unknown']);

/** The tracing of a process; {@link TasksTracing.disabled} when the API cannot be loaded. */
export class TasksTracing {
  private constructor(private readonly api: typeof OtelApi | undefined) {}

  /**
   * Load `@opentelemetry/api` (the copy the application registered its SDK with); fail soft: without the package
   * the tracing is {@link TasksTracing.disabled}.
   */
  static async load(): Promise<TasksTracing> {
    try {
      return new TasksTracing(await import('@opentelemetry/api'));
    } catch {
      return TasksTracing.disabled();
    }
  }

  /** Tracing that records nothing (its hook and tracer pass through). */
  static disabled(): TasksTracing {
    return new TasksTracing(undefined);
  }

  /** Whether `@opentelemetry/api` was loaded (spans are still no-ops until an SDK is registered). */
  get loaded(): boolean {
    return this.api !== undefined;
  }

  /** Around `callTool`: the request span; sets `context.trace.request` so a created task links to it. */
  serviceHook(): TaskServiceHook {
    return {
      around: async <T>(context: Parameters<TaskServiceHook['around']>[0], next: () => Promise<T>): Promise<T> => {
        const api = this.api;
        if (!api || context.operation !== 'callTool') return next();
        const parent = remoteContext(api, context.trace?.incoming);
        const span = api.trace
          .getTracer(TRACER_NAME)
          .startSpan(
            `tools/call ${context.tool ?? ''}`.trim(),
            { kind: api.SpanKind.SERVER, attributes: { [A.tool]: context.tool ?? '', [A.generation]: context.generation ?? 'none' } },
            parent,
          );
        const carrier = carrierOf(api, span);
        if (carrier && context.trace) context.trace.request = carrier;
        try {
          const result = await api.context.with(api.trace.setSpan(parent, span), next);
          const outcome = result as unknown as CallOutcome;
          span.setAttribute(A.outcome, outcome.kind);
          if ('task' in outcome) span.setAttributes({ [A.taskId]: outcome.task.taskId, [A.status]: outcome.task.status });
          return result;
        } catch (error) {
          span.setStatus({ code: api.SpanStatusCode.ERROR, message: errorText(error) });
          throw error;
        } finally {
          span.end();
        }
      },
    };
  }

  /** The worker's tracing port (see {@link RunTracer}). */
  runTracer(): RunTracer {
    return {
      startRun: (run) => {
        const api = this.api;
        if (!api) return NO_TRACE;
        const tracer = api.trace.getTracer(TRACER_NAME);
        const linked = remoteContext(api, run.link);
        const linkContext = api.trace.getSpanContext(linked);
        const span = tracer.startSpan(`task ${run.tool}`, {
          kind: api.SpanKind.CONSUMER,
          root: true,
          attributes: { [A.tool]: run.tool, [A.generation]: run.generation, [A.taskId]: run.taskId, [A.attempt]: run.attempt },
          links: linkContext ? [{ context: linkContext }] : [],
        });
        const parent = api.trace.setSpan(api.ROOT_CONTEXT, span);
        const open = new Set<OtelApi.Span>();
        const child = (name: string, attributes: OtelApi.Attributes): OtelApi.Span => {
          const started = tracer.startSpan(name, { kind: api.SpanKind.INTERNAL, attributes }, parent);
          open.add(started);
          return started;
        };
        const finish = (ended: OtelApi.Span): void => {
          if (!open.delete(ended)) return;
          ended.end();
        };
        return {
          step: (name) => {
            const step = child(`step ${name}`, { [A.step]: name });
            return ({ replayed }) => {
              step.setAttribute(A.replayed, replayed);
              finish(step);
            };
          },
          operation: (spec) => {
            const operation = child(`operation ${spec.effect}`, { [A.effect]: spec.effect, [A.operationKey]: spec.key });
            return (status) => {
              operation.setAttribute(A.status, status);
              if (FAILED_OPERATIONS.has(status)) operation.setStatus({ code: api.SpanStatusCode.ERROR, message: `operation ${status}` });
              finish(operation);
            };
          },
          end: (outcome, message) => {
            for (const left of [...open]) {
              left.setStatus({ code: api.SpanStatusCode.ERROR, message: 'the run ended inside it' });
              finish(left);
            }
            span.setAttribute(A.outcome, outcome);
            if (outcome === 'completed' || outcome === 'failed') span.setAttribute(A.status, outcome);
            if (outcome === 'failed' || outcome === 'aborted_runtime_limit')
              span.setStatus({ code: api.SpanStatusCode.ERROR, ...(message ? { message } : {}) });
            span.end();
          },
        };
      },
    };
  }
}

const NO_TRACE: RunTrace = { step: () => () => {}, operation: () => () => {}, end: () => {} };

/** A context whose span is the remote one of `carrier` (ROOT_CONTEXT without a valid one). */
function remoteContext(api: typeof OtelApi, carrier: TraceCarrier | undefined): OtelApi.Context {
  const parsed = carrier ? parseTraceparent(carrier.traceparent) : undefined;
  if (!parsed || !carrier) return api.ROOT_CONTEXT;
  return api.trace.setSpanContext(api.ROOT_CONTEXT, {
    traceId: parsed.traceId,
    spanId: parsed.spanId,
    traceFlags: parsed.flags,
    isRemote: true,
    ...(carrier.tracestate ? { traceState: api.createTraceState(carrier.tracestate) } : {}),
  });
}

/** The carrier of a recording span (`undefined` for a no-op span: no SDK registered). */
function carrierOf(api: typeof OtelApi, span: OtelApi.Span): TraceCarrier | undefined {
  const context = span.spanContext();
  if (!api.isSpanContextValid(context)) return undefined;
  const traceState = context.traceState?.serialize();
  return {
    traceparent: formatTraceparent({ traceId: context.traceId, spanId: context.spanId, flags: context.traceFlags }),
    ...(traceState ? { tracestate: traceState } : {}),
  };
}

/** A short error text for a span status: a coded error's code, never its data. */
function errorText(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' || typeof code === 'string' ? `error ${String(code)}` : 'error';
}
