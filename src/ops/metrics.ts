import type { IncomingMessage, ServerResponse } from 'node:http';

import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

import { TasksError } from '../core/errors.js';
import type { UpstreamStatus } from '../core/executor.js';
import type { TaskStore } from '../core/store.js';
import type { WorkerObserver } from '../core/worker-observer.js';
import { ErrorCode } from '../protocol/constants.js';
import type { CallOutcome } from '../service/calls/call-service.js';
import type { TaskServiceHook } from '../service/hooks.js';
import type { WorkerPresenceState } from '../service/worker-presence.js';

/**
 * The Prometheus metrics of one mcp-tasks process (API or worker), on `prom-client`. They are taken at four
 * seams only: the task service door ({@link TasksMetrics.serviceHook}), the worker's observer port
 * ({@link TasksMetrics.workerObserver}), the store port ({@link TasksMetrics.instrumentStore}) and the HTTP front
 * ({@link TasksMetrics.observeHttp}). Labels are bounded: tool names of the registry, generations, statuses,
 * operations, HTTP methods and status codes — never task ids or owners.
 */

const RUN_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600];
const FAST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const HTTP_METHODS = new Set(['GET', 'POST', 'DELETE', 'HEAD', 'OPTIONS', 'PUT']);
/** Store methods timed (the port's operations; anything else is not a store operation). */
const STORE_OPERATIONS = new Set([
  'create',
  'get',
  'getWithOutcome',
  'getUnscoped',
  'getOutcome',
  'transition',
  'writeStatusMessages',
  'list',
  'startAttempt',
  'renewLeases',
  'claimRunnable',
  'claimLapsed',
  'requestInput',
  'listInputRequests',
  'answerInput',
  'listWaitingSince',
  'getStep',
  'lookupStep',
  'putStep',
  'expireDue',
  'readEventsAfter',
  'lastEventSeq',
  'schemaStatus',
  'browse',
  'listTaskEvents',
  // The ledger (issue 12): a call with an idempotency key creates its task in claimIdempotencyKey.
  'claimIdempotencyKey',
  'findIdempotencyKey',
  'openOperation',
  'settleOperation',
  'getOperation',
  'listOperations',
  'appendAudit',
  'listAudit',
  'purgeAudit',
]);

/** Most input-waiting tasks the gauge counts (one bounded store read per scrape). */
const INPUT_WAITING_CAP = 10_000;

/** The metrics of one process. */
export class TasksMetrics {
  /** The registry `/metrics` serves (default process metrics included). */
  readonly registry = new Registry();
  private readonly created: Counter<'tool' | 'generation' | 'cohort'>;
  private readonly refused: Counter<'tool' | 'reason'>;
  private readonly terminal: Counter<'tool' | 'generation' | 'status'>;
  private readonly inline: Counter<'tool' | 'cohort'>;
  private readonly operations: Counter<'operation' | 'outcome'>;
  private readonly runDuration: Histogram<'tool' | 'outcome'>;
  private readonly queueWait: Histogram<'tool'>;
  private readonly runs: Counter<'tool' | 'outcome'>;
  private readonly takeovers: Counter;
  private readonly orphans: Counter<'outcome'>;
  private readonly cancelsRequested: Counter;
  private readonly cancelsDelivered: Counter<'tool'>;
  private readonly threadTerminations: Counter<'tool'>;
  private readonly inputAnswers: Counter;
  private readonly polls: Counter<'generation'>;
  private readonly pollsHeldBack: Counter;
  private readonly pollHoldSeconds: Counter;
  private readonly pollsPerTask: Histogram;
  private readonly storeLatency: Histogram<'operation' | 'outcome'>;
  private readonly httpRequests: Counter<'method' | 'code'>;
  private readonly httpDuration: Histogram<'method'>;
  private readonly inputWait: Histogram<'tool'>;
  private readonly shadowChecks: Counter<'tool' | 'result'>;
  private readonly shadowMismatches: Counter<'tool'>;
  private readonly structuredContentOversized: Counter<'tool'>;
  private active = 0;
  /** The store the input-wait metrics read (see {@link TasksMetrics.readInputsFrom}). */
  private inputs: Pick<TaskStore, 'listInputRequests' | 'listWaitingSince' | 'getUnscoped'> | undefined;
  /** The upstreams of this process (see {@link TasksMetrics.watchUpstreams}); none until then. */
  private upstreams: () => readonly UpstreamStatus[] = () => [];
  /** Whether this process drains, and (an API process without a worker) its store's workers: {@link TasksMetrics.watchProcess}. */
  private process: { draining: () => boolean; workers?: (() => WorkerPresenceState) | undefined } = { draining: () => false };

  constructor(options: { role: 'api' | 'worker' | 'serve'; defaultMetrics?: boolean }) {
    const registers = [this.registry];
    this.registry.setDefaultLabels({ role: options.role });
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
    const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> =>
      new Counter({ name, help, labelNames, registers });
    const histogram = <L extends string>(name: string, help: string, buckets: number[], labelNames: readonly L[] = []): Histogram<L> =>
      new Histogram({ name, help, buckets, labelNames, registers });
    // cohort: canary | stable for a tool with a canary (issue 15 item 7), none otherwise — three values at most.
    this.created = counter('mcp_tasks_tasks_created_total', 'Tasks created (durably, before their id was returned) by this process.', [
      'tool',
      'generation',
      'cohort',
    ]);
    this.refused = counter('mcp_tasks_calls_refused_total', 'Task-augmented tools/call refused by the kill switch or the canary (-31003), by data.reason.', [
      'tool',
      'reason',
    ]);
    this.terminal = counter('mcp_tasks_tasks_terminal_total', 'Tasks this process settled: completed/failed by a run, cancelled by a request.', [
      'tool',
      'generation',
      'status',
    ]);
    this.inline = counter('mcp_tasks_calls_inline_total', 'tools/call answered without a task (sync tools, callers without tasks, the sync fallback).', [
      'tool',
      'cohort',
    ]);
    this.operations = counter('mcp_tasks_service_operations_total', 'Task service operations (every entry path), by outcome (ok, error).', [
      'operation',
      'outcome',
    ]);
    this.runs = counter('mcp_tasks_runs_total', 'Tool runs by how they ended (completed, failed, parked, aborted_<reason>, withdrawn, discarded).', [
      'tool',
      'outcome',
    ]);
    this.runDuration = histogram('mcp_tasks_run_duration_seconds', 'Duration of one tool run.', RUN_BUCKETS, ['tool', 'outcome']);
    this.queueWait = histogram(
      'mcp_tasks_queue_wait_seconds',
      'Time from creation (or from becoming runnable again) to the start of a run.',
      FAST_BUCKETS.concat([5, 15, 60, 300]),
      ['tool'],
    );
    this.takeovers = counter('mcp_tasks_lease_takeovers_total', 'Lapsed leases taken over by this worker.');
    this.orphans = counter('mcp_tasks_orphans_recovered_total', 'Tasks of a lapsed lease: re-run, or failed (interrupted, attempts_exhausted).', ['outcome']);
    this.cancelsRequested = counter('mcp_tasks_cancellations_requested_total', 'Cancellation requests accepted by the task service.');
    this.cancelsDelivered = counter('mcp_tasks_cancellations_delivered_total', "Cancellations that reached a running tool's signal.", ['tool']);
    this.threadTerminations = counter(
      'mcp_tasks_thread_terminations_total',
      'Threads of the isolated executor terminated because a started run did not stop within the abort grace after its signal aborted.',
      ['tool'],
    );
    this.inputAnswers = counter('mcp_tasks_input_answers_total', 'Answers to input requests accepted.');
    this.polls = counter('mcp_tasks_polls_total', 'Task status reads (tasks/get) by generation.', ['generation']);
    this.pollsHeldBack = counter('mcp_tasks_polls_held_back_total', 'Too-fast polls held back.');
    this.pollHoldSeconds = counter('mcp_tasks_poll_hold_seconds_total', 'Total time too-fast polls were held back.');
    this.pollsPerTask = histogram(
      'mcp_tasks_polls_per_task',
      'Polls a requestor made of one task until it found it terminal.',
      [1, 2, 3, 5, 10, 20, 50, 100, 500],
    );
    this.storeLatency = histogram('mcp_tasks_store_operation_duration_seconds', 'Latency of task store operations.', FAST_BUCKETS, ['operation', 'outcome']);
    this.httpRequests = counter('mcp_tasks_http_requests_total', 'HTTP requests by method and status code.', ['method', 'code']);
    this.httpDuration = histogram(
      'mcp_tasks_http_request_duration_seconds',
      'HTTP request duration until the response ended (streams included).',
      RUN_BUCKETS,
      ['method'],
    );
    this.inputWait = histogram(
      'mcp_tasks_input_wait_seconds',
      'Time an input request waited for its answer (from the question to the accepted answer).',
      RUN_BUCKETS,
      ['tool'],
    );
    this.shadowChecks = counter(
      'mcp_tasks_shadow_checks_total',
      'Shadow mode comparisons of a task with its job: match, mismatch, error (the adapter failed).',
      ['tool', 'result'],
    );
    this.shadowMismatches = counter(
      'mcp_tasks_shadow_mismatches_total',
      'Differences shadow mode recorded between a task and its job (once per run, phase and pair of states).',
      ['tool'],
    );
    this.structuredContentOversized = counter(
      'mcp_tasks_structured_content_oversized_total',
      'Tool results (task runs and inline calls) whose structuredContent JSON exceeded --structured-content-max-bytes.',
      ['tool'],
    );
    const inputs = (): typeof this.inputs => this.inputs;
    new Gauge({
      name: 'mcp_tasks_input_waiting_tasks',
      help: `Unexpired tasks in input_required in the store (read at scrape time; at most ${INPUT_WAITING_CAP}).`,
      registers,
      async collect(this: Gauge) {
        const store = inputs();
        if (store) this.set((await store.listWaitingSince(Date.now(), INPUT_WAITING_CAP).catch(() => [])).length);
      },
    });
    // Read at scrape time from the connections' own state (issue 28): one series per configured upstream, bounded.
    const upstreamGauge = (name: string, help: string, value: (status: UpstreamStatus) => number): Gauge<'upstream'> => {
      const upstreams = (): readonly UpstreamStatus[] => this.upstreams();
      return new Gauge({
        name,
        help,
        labelNames: ['upstream'],
        registers,
        collect(this: Gauge<'upstream'>) {
          for (const status of upstreams()) this.set({ upstream: status.name }, value(status));
        },
      });
    };
    upstreamGauge('mcp_tasks_upstream_up', 'Whether the connection to an upstream MCP server (serve --upstream) is ready: 1, else 0.', (status) =>
      status.state === 'ready' ? 1 : 0,
    );
    upstreamGauge('mcp_tasks_upstream_restarts', 'Successful reconnections to an upstream MCP server since this process started.', (status) => status.restarts);
    upstreamGauge(
      'mcp_tasks_upstream_failed_restarts',
      'Reconnection attempts to an upstream MCP server that failed since this process started.',
      (status) => status.failedRestarts,
    );
    upstreamGauge('mcp_tasks_upstream_calls_in_flight', 'Calls forwarded to an upstream MCP server and not answered yet.', (status) => status.inFlight);
    const processState = (): typeof this.process => this.process;
    new Gauge({
      name: 'mcp_tasks_draining',
      help: 'Whether this process drains (after SIGTERM: it finishes or hands back its runs and takes no new task): 1, else 0.',
      registers,
      collect(this: Gauge) {
        this.set(processState().draining() ? 1 : 0);
      },
    });
    // Only where the process watches its store's workers (serve --no-worker): absent elsewhere rather than a 0 that
    // would read as "no worker".
    new Gauge({
      name: 'mcp_tasks_worker_processes',
      help: 'Worker processes of the store at the last look of an API process without a worker: takes_tasks (live, not draining) and draining.',
      labelNames: ['state'],
      registers,
      collect(this: Gauge<'state'>) {
        const workers = processState().workers?.();
        if (!workers) return;
        this.set({ state: 'takes_tasks' }, workers.live);
        this.set({ state: 'draining' }, workers.draining);
      },
    });
    const activeRuns = (): number => this.active;
    new Gauge({
      name: 'mcp_tasks_active_runs',
      help: 'Tool runs in progress in this process.',
      registers,
      collect(this: Gauge) {
        this.set(activeRuns());
      },
    });
  }

  /** Around every task service operation: counts, created tasks, polls, cancels, answers. */
  serviceHook(): TaskServiceHook {
    return {
      around: async <T>(context: Parameters<TaskServiceHook['around']>[0], next: () => Promise<T>): Promise<T> => {
        try {
          const result = await next();
          this.operations.inc({ operation: context.operation, outcome: 'ok' });
          if (context.operation === 'callTool' && context.tool !== undefined) {
            const outcome = result as unknown as CallOutcome;
            const cohort = context.cohort ?? 'none';
            if (outcome.kind === 'task') this.created.inc({ tool: context.tool, generation: context.generation ?? 'none', cohort });
            else if (outcome.kind === 'result') this.inline.inc({ tool: context.tool, cohort });
          } else if (context.operation === 'get') {
            this.polls.inc({ generation: context.generation ?? 'none' });
          } else if (context.operation === 'cancel') {
            this.cancelsRequested.inc();
            const answer = result as unknown as { cancelled: boolean; task: { toolName: string; generation: string } };
            if (answer.cancelled) this.terminal.inc({ tool: answer.task.toolName, generation: answer.task.generation, status: 'cancelled' });
          } else if (context.operation === 'answerInput') {
            this.inputAnswers.inc();
            if (context.taskId !== undefined) await this.observeInputWait(context.taskId, result as unknown as string[]);
          }
          return result;
        } catch (error) {
          this.operations.inc({ operation: context.operation, outcome: 'error' });
          if (error instanceof TasksError && error.code === ErrorCode.KillSwitch && context.tool !== undefined) {
            const reason = (error.data as { reason?: string } | undefined)?.reason ?? 'kill_switch';
            this.refused.inc({ tool: context.tool, reason });
          }
          throw error;
        }
      },
    };
  }

  /**
   * Read the input-wait metrics from `store`: `mcp_tasks_input_waiting_tasks` at scrape time, and each accepted
   * answer's wait for `mcp_tasks_input_wait_seconds` (one `listInputRequests` read per answered call).
   */
  readInputsFrom(store: Pick<TaskStore, 'listInputRequests' | 'listWaitingSince' | 'getUnscoped'>): void {
    this.inputs = store;
  }

  /** Serve the `mcp_tasks_upstream_*` gauges from `statuses` (the process's upstream connections, read at scrape time). */
  watchUpstreams(statuses: () => readonly UpstreamStatus[]): void {
    this.upstreams = statuses;
  }

  /**
   * Serve `mcp_tasks_draining` from `draining` and, for an API process without a worker, `mcp_tasks_worker_processes`
   * from `workers` (the process's view of its store's workers, as `/readyz` reports it); both read at scrape time.
   */
  watchProcess(state: { draining: () => boolean; workers?: (() => WorkerPresenceState) | undefined }): void {
    this.process = state;
  }

  private async observeInputWait(taskId: string, accepted: readonly string[]): Promise<void> {
    if (!this.inputs || accepted.length === 0) return;
    const keys = new Set(accepted);
    try {
      const [requests, task] = await Promise.all([this.inputs.listInputRequests(taskId), this.inputs.getUnscoped(taskId)]);
      for (const request of requests) {
        if (keys.has(request.key) && request.answeredAt !== null)
          this.inputWait.observe({ tool: task?.toolName ?? 'unknown' }, Math.max(0, request.answeredAt - request.createdAt) / 1000);
      }
    } catch {
      // A metric never fails the answer it measures.
    }
  }

  /** The worker's observer port. */
  workerObserver(): WorkerObserver {
    return {
      runStarted: (run) => {
        this.active += 1;
        this.queueWait.observe({ tool: run.tool }, run.queueWaitMs / 1000);
      },
      runEnded: (run) => {
        this.active -= 1;
        this.runs.inc({ tool: run.tool, outcome: run.outcome });
        this.runDuration.observe({ tool: run.tool, outcome: run.outcome }, run.durationMs / 1000);
        if (run.outcome === 'completed' || run.outcome === 'failed') this.terminal.inc({ tool: run.tool, generation: run.generation, status: run.outcome });
      },
      leasesTakenOver: (count) => this.takeovers.inc(count),
      orphanRecovered: (outcome) => this.orphans.inc({ outcome }),
      cancelDelivered: (tool) => this.cancelsDelivered.inc({ tool }),
      threadTerminated: (tool) => this.threadTerminations.inc({ tool }),
      shadowChecked: (tool, result) => this.shadowChecks.inc({ tool, result }),
      shadowMismatch: (tool) => this.shadowMismatches.inc({ tool }),
      structuredContentOversized: (tool) => this.structuredContentOversized.inc({ tool }),
    };
  }

  /** The poll throttle's observer. */
  pollObserver(): { heldBack(delayMs: number): void; polledToEnd(polls: number): void } {
    return {
      heldBack: (delayMs) => {
        this.pollsHeldBack.inc();
        this.pollHoldSeconds.inc(delayMs / 1000);
      },
      polledToEnd: (polls) => this.pollsPerTask.observe(polls),
    };
  }

  /** `store` with every port operation timed (the same object otherwise: `close` and event listeners pass through). */
  instrumentStore<S extends TaskStore>(store: S): S {
    const latency = this.storeLatency;
    return new Proxy(store, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof property !== 'string' || typeof value !== 'function' || !STORE_OPERATIONS.has(property))
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
        return (...args: unknown[]) => {
          const end = latency.startTimer({ operation: property });
          return (value as (...args: unknown[]) => Promise<unknown>).apply(target, args).then(
            (result) => {
              end({ outcome: 'ok' });
              return result;
            },
            (error: unknown) => {
              end({ outcome: 'error' });
              throw error;
            },
          );
        };
      },
    });
  }

  /** Count and time one HTTP request when its response ends. */
  observeHttp(request: IncomingMessage, response: ServerResponse): void {
    const method = HTTP_METHODS.has(request.method ?? '') ? (request.method as string) : 'OTHER';
    const end = this.httpDuration.startTimer({ method });
    response.once('close', () => {
      end();
      this.httpRequests.inc({ method, code: String(response.statusCode) });
    });
  }

  /** The text exposition of every metric. */
  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
