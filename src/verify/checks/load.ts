/**
 * Load gate, both generations: reported with numbers, judged against thresholds the user sets (tool map
 * `thresholds`, `--threshold name=value`). Every check is bounded in time and counts its errors; a 5xx, a refused
 * connection or a hang under load is a failure whatever the thresholds. The timing checks run alone, after the
 * others; the TTL clean-up check only waits and runs with the rest.
 */
import type { CheckDefinition } from '../check.js';
import type { CheckContext } from '../context.js';
import { describe, fail, skip } from '../expect.js';
import { TransportError, type WireAnswer } from '../wire/exchange.js';
import type { TaskState, TaskWire } from '../wire/tasks.js';
import { both, isTerminal, percentile } from './shared.js';

/** Tasks the honouring client of the amplification check polls in turn. */
const HONEST_TASKS = 5;
/** Smallest baseline latency a slowdown is computed against (ms). */
const BASELINE_FLOOR_MS = 5;

/** Counts errors under load: HTTP 5xx, transport failures, JSON-RPC errors nobody asked for. */
class ErrorTally {
  count = 0;
  readonly examples: string[] = [];

  note(what: string): void {
    this.count += 1;
    if (this.examples.length < 3) this.examples.push(what);
  }

  /** Run a request; a transport failure or a 5xx is counted (and returned as undefined). */
  async guard(what: string, request: () => Promise<WireAnswer>): Promise<WireAnswer | undefined> {
    try {
      const answer = await request();
      if (answer.status >= 500) this.note(`${what}: ${describe(answer)}`);
      return answer;
    } catch (error) {
      if (error instanceof TransportError) {
        this.note(`${what}: ${error.message}`);
        return undefined;
      }
      throw error;
    }
  }

  report(ctx: CheckContext): void {
    ctx.measure('errors', this.count);
    if (this.count > 0) fail(`${this.count} error(s) under load (must be 0): ${this.examples.join('; ')}`);
  }
}

/** Poll one task until terminal, honouring the hint; records the time it was first seen terminal. */
async function followToEnd(
  ctx: CheckContext,
  wire: TaskWire,
  taskId: string,
  tally: ErrorTally,
  deadline: number,
): Promise<{ endedAt: number; status: string } | undefined> {
  let last: TaskState | undefined;
  while (Date.now() < deadline) {
    const answer = await tally.guard('tasks/get', () => wire.get(taskId));
    last = answer ? wire.taskOf(answer) : undefined;
    if (answer && !last) tally.note(`tasks/get ${taskId}: ${describe(answer)}`);
    if (last && isTerminal(last.status)) {
      ctx.track(wire, taskId, last.status);
      return { endedAt: Date.now(), status: last.status };
    }
    await ctx.sleep(ctx.pollWait(last));
  }
  return undefined;
}

/** Metric names that speak of queues. */
const QUEUE_NAME = /queue|queued|pending|backlog/i;

/**
 * One line on the server's queue metrics from Prometheus text: per histogram, the bucket bounds at the median and
 * the 95th percentile over all its series and the number of observations (`name p50≤0.005s p95≤0.25s n=24`); per
 * gauge or counter, the sum over its series (`name=3`). `undefined` when nothing speaks of queues.
 */
export function summariseQueueMetrics(text: string): string | undefined {
  const histograms = new Map<string, Map<number, number>>();
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const match = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const [, name = '', labels = '', raw = ''] = match;
    const value = Number(raw);
    if (!QUEUE_NAME.test(name) || !Number.isFinite(value)) continue;
    if (name.endsWith('_bucket')) {
      const le = /(?:^|[{,])le="([^"]+)"/.exec(labels)?.[1];
      if (le === undefined) continue;
      const base = name.slice(0, -'_bucket'.length);
      const buckets = histograms.get(base) ?? new Map<number, number>();
      const bound = le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le);
      buckets.set(bound, (buckets.get(bound) ?? 0) + value);
      histograms.set(base, buckets);
    } else if (!name.endsWith('_sum') && !name.endsWith('_count')) {
      values.set(name, (values.get(name) ?? 0) + value);
    }
  }
  const parts: string[] = [];
  for (const [name, buckets] of histograms) {
    const bounds = [...buckets.entries()].sort(([a], [b]) => a - b);
    const total = bounds.at(-1)?.[1] ?? 0;
    const at = (q: number) => {
      const bound = bounds.find(([, cumulative]) => cumulative >= q * total)?.[0];
      return bound === undefined || bound === Number.POSITIVE_INFINITY ? '>max' : `≤${bound}s`;
    };
    parts.push(total === 0 ? `${name} n=0` : `${name} p50${at(0.5)} p95${at(0.95)} n=${total}`);
  }
  for (const [name, value] of values) parts.push(`${name}=${value}`);
  return parts.length > 0 ? parts.join('; ') : undefined;
}

/** The server's queue metrics (see {@link summariseQueueMetrics}) from its metrics endpoint. */
async function queueMetrics(ctx: CheckContext): Promise<string | undefined> {
  const url = ctx.map.server.metricsUrl ?? new URL('/metrics', ctx.target.url).toString();
  try {
    const response = await fetch(url, {
      signal: AbortSignal.timeout(3000),
      ...(ctx.target.tokenA ? { headers: { authorization: `Bearer ${ctx.target.tokenA}` } } : {}),
    });
    if (!response.ok || !(response.headers.get('content-type') ?? '').includes('text/plain')) return undefined;
    return summariseQueueMetrics(await response.text());
  } catch {
    return undefined;
  }
}

export const loadChecks: CheckDefinition[] = [
  ...both({
    id: 'load.concurrency',
    title: "N concurrent tasks all complete without errors and stay within the declared concurrency (observed from the slow tool's timing)",
    gate: 'load',
    rules: { v1: ['R52', 'R12'], v2: ['E14', 'E18'] },
    needs: ['slow'],
    timeoutMs: 120_000,
    alone: true,
    async run(ctx) {
      const { loadTasks, loadTaskMs, loadBudgetMs } = ctx.thresholds;
      const tally = new ErrorTally();
      const wire = await ctx.wire('a');
      const started = Date.now();
      const deadline = started + Math.min(loadBudgetMs, 110_000);
      const createMs: number[] = [];
      const ends = await Promise.all(
        Array.from({ length: loadTasks }, async () => {
          const before = Date.now();
          const answer = await tally.guard('tools/call', () => wire.call(ctx.role('slow').tool, ctx.args(ctx.role('slow'), { ms: loadTaskMs })));
          createMs.push(Date.now() - before);
          const task = answer ? wire.createdTask(answer) : undefined;
          if (!task) {
            if (answer) tally.note(`tools/call: ${describe(answer)}`);
            return undefined;
          }
          ctx.track(wire, task.taskId);
          return followToEnd(ctx, wire, task.taskId, tally, deadline);
        }),
      );
      const finished = ends.filter((end): end is { endedAt: number; status: string } => end !== undefined);
      const makespan = Math.max(0, ...finished.map((end) => end.endedAt - started));
      const parallelism = makespan > 0 ? (finished.length * loadTaskMs) / makespan : 0;
      ctx.measure('tasks', loadTasks);
      ctx.measure('taskMs', loadTaskMs);
      ctx.measure('completed', finished.filter((end) => end.status === 'completed').length);
      ctx.measure('makespanMs', makespan);
      ctx.measure('observedParallelism', Number(parallelism.toFixed(2)));
      ctx.measure('createP50Ms', percentile(createMs, 50));
      ctx.measure('createMaxMs', Math.max(0, ...createMs));
      tally.report(ctx);
      if (finished.length < loadTasks) fail(`${loadTasks - finished.length} of ${loadTasks} tasks did not end within the load budget`);
      const declared = ctx.map.server.concurrency;
      if (declared !== undefined) {
        const floor = Math.ceil(loadTasks / declared) * loadTaskMs * 0.8;
        if (makespan < floor)
          fail(
            `${loadTasks} tasks of ${loadTaskMs} ms finished in ${makespan} ms: more than the declared concurrency ${declared} ran at once (expected ≥ ${Math.round(floor)} ms)`,
          );
      }
    },
  }),
  ...both({
    id: 'load.poll-amplification',
    title: 'clients polling faster than pollInterval do not slow a client that honours it beyond maxPollSlowdown',
    gate: 'load',
    rules: { v1: ['R21', 'R52', 'R53'], v2: ['E18', 'X10'] },
    needs: ['slow'],
    timeoutMs: 120_000,
    alone: true,
    async run(ctx) {
      const { pollClients, pollWindowMs, maxPollSlowdown } = ctx.thresholds;
      const tally = new ErrorTally();
      const honest = await ctx.wire('a');
      const lifetime = pollWindowMs * 3 + 5000;
      // The honouring client polls each of its tasks once per interval, staggered, so a window holds enough samples.
      const own: TaskState[] = [];
      for (let index = 0; index < HONEST_TASKS; index += 1) own.push(await ctx.createTask(honest, ctx.role('slow'), { ms: lifetime }));
      const measure = async (until: number): Promise<number[]> => {
        const latencies: number[] = [];
        let last: TaskState | undefined = own[0];
        for (let turn = 0; Date.now() < until; turn += 1) {
          const task = own[turn % own.length] as TaskState;
          const before = Date.now();
          const answer = await tally.guard('tasks/get (honouring)', () => honest.get(task.taskId));
          latencies.push(Date.now() - before);
          last = (answer ? honest.taskOf(answer) : undefined) ?? last;
          await ctx.sleep(Math.max(1, ctx.pollWait(last) / own.length));
        }
        return latencies;
      };
      const baseline = await measure(Date.now() + pollWindowMs);
      const targets = await Promise.all(
        Array.from({ length: pollClients }, async () => {
          const wire = await ctx.wire('a');
          return { wire, task: await ctx.createTask(wire, ctx.role('slow'), { ms: lifetime }) };
        }),
      );
      const warmUp = Math.min(500, pollWindowMs / 4);
      const stop = Date.now() + warmUp + pollWindowMs;
      let aggressivePolls = 0;
      const flood = Promise.all(
        targets.map(async ({ wire, task: target }) => {
          while (Date.now() < stop) {
            await tally.guard('tasks/get (aggressive)', () => wire.get(target.taskId));
            aggressivePolls += 1;
          }
        }),
      );
      // A server may let the first fast polls through before it throttles; measure once the flood is steady.
      await ctx.sleep(warmUp);
      const loaded = await measure(stop);
      await flood;
      // Loopback answers take a few ms; below 5 ms a ratio measures scheduler noise, not the server.
      const base = Math.max(BASELINE_FLOOR_MS, percentile(baseline, 50));
      const slowdown = percentile(loaded, 50) / base;
      ctx.measure('baselineP50Ms', percentile(baseline, 50));
      ctx.measure('baselineP95Ms', percentile(baseline, 95));
      ctx.measure('amplifiedP50Ms', percentile(loaded, 50));
      ctx.measure('amplifiedP95Ms', percentile(loaded, 95));
      ctx.measure('samples', `${baseline.length}/${loaded.length}`);
      ctx.measure('slowdown', Number(slowdown.toFixed(2)));
      ctx.measure('aggressiveClients', pollClients);
      ctx.measure('aggressivePollsPerSecond', Math.round((aggressivePolls * 1000) / (warmUp + pollWindowMs)));
      tally.report(ctx);
      if (slowdown > maxPollSlowdown)
        fail(
          `the honouring client's median tasks/get took ${slowdown.toFixed(1)}× longer under ${pollClients} aggressive pollers (threshold maxPollSlowdown ${maxPollSlowdown})`,
        );
    },
  }),
  ...both({
    id: 'load.ttl-cleanup',
    title: 'tasks past their TTL are cleaned up (reported: how many are gone, how soon)',
    gate: 'load',
    severity: 'warning',
    rules: { v1: ['R20', 'R52'], v2: ['E20'] },
    needs: ['slow'],
    timeoutMs: 120_000,
    async run(ctx) {
      const wire = await ctx.wire('a');
      const tally = new ErrorTally();
      const tasks: TaskState[] = [];
      for (let index = 0; index < 4; index += 1)
        tasks.push(await ctx.createTask(wire, ctx.role('slow'), { ms: 100 }, ctx.generation === 'v1' ? { task: { ttl: 1000 } } : {}));
      const ttl = ctx.generation === 'v2' ? (ctx.map.server.ttlMs ?? tasks[0]?.raw.ttlMs) : tasks[0]?.raw.ttl;
      if (typeof ttl !== 'number' || ttl > ctx.thresholds.maxTtlWaitMs)
        skip(`the granted retention is ${JSON.stringify(ttl)} ms, longer than maxTtlWaitMs (${ctx.thresholds.maxTtlWaitMs} ms)`);
      const expiresAt = Math.max(...tasks.map((task) => Date.parse(String(task.raw.createdAt)))) + ttl;
      const giveUp = expiresAt + Math.max(5000, ttl);
      await ctx.sleep(Math.max(0, expiresAt - Date.now()));
      let gone = 0;
      while (Date.now() < giveUp) {
        gone = 0;
        for (const task of tasks) {
          const answer = await tally.guard('tasks/get', () => wire.get(task.taskId));
          if (answer?.response?.error?.code === -32602) gone += 1;
        }
        if (gone === tasks.length) break;
        await ctx.sleep(250);
      }
      for (const task of tasks) ctx.track(wire, task.taskId, 'completed');
      ctx.measure('ttlMs', ttl);
      ctx.measure('gone', `${gone}/${tasks.length}`);
      ctx.measure('cleanupLagMs', Math.max(0, Date.now() - expiresAt));
      tally.report(ctx);
      if (gone < tasks.length)
        fail(
          `${tasks.length - gone} of ${tasks.length} tasks were still readable ${Math.round(giveUp - expiresAt)} ms after their TTL (R20/E20 allow keeping them; retention then grows without bound)`,
        );
    },
  }),
  ...both({
    id: 'load.backpressure',
    title: 'with many slow tasks outstanding, creates keep answering promptly: accepted or refused with a clear error, never a hang or a 5xx',
    gate: 'load',
    rules: { v1: ['R52', 'R12', 'R46'], v2: ['E14', 'E40'] },
    needs: ['slow'],
    timeoutMs: 120_000,
    alone: true,
    async run(ctx) {
      const { backpressureTasks, maxCreateMs, loadTaskMs } = ctx.thresholds;
      const wire = await ctx.wire('a');
      const tally = new ErrorTally();
      const latencies: number[] = [];
      let accepted = 0;
      const refusals: string[] = [];
      let slow = 0;
      const batch = 8;
      for (let offset = 0; offset < backpressureTasks; offset += batch) {
        await Promise.all(
          Array.from({ length: Math.min(batch, backpressureTasks - offset) }, async () => {
            const before = Date.now();
            const slowTool = ctx.role('slow');
            const answer = await tally.guard('tools/call', () =>
              wire.call(slowTool.tool, ctx.args(slowTool, { ms: loadTaskMs * 8 + 10_000 }), { timeoutMs: maxCreateMs * 3 }),
            );
            const took = Date.now() - before;
            latencies.push(took);
            if (took > maxCreateMs) slow += 1;
            if (!answer) return;
            const task = wire.createdTask(answer);
            if (task) {
              accepted += 1;
              ctx.track(wire, task.taskId);
              return;
            }
            const error = answer.response?.error;
            if (error && typeof error.message === 'string' && error.message.length > 0) refusals.push(`${error.code} ${error.message}`);
            else if (answer.status === 429 || answer.status === 503)
              refusals.push(`HTTP ${answer.status}${answer.headers.get('retry-after') ? ` retry-after ${answer.headers.get('retry-after')}` : ''}`);
            else tally.note(`tools/call under backpressure: ${describe(answer)}`);
          }),
        );
      }
      const queue = await queueMetrics(ctx);
      ctx.measure('outstanding', backpressureTasks);
      ctx.measure('accepted', accepted);
      ctx.measure('refused', refusals.length);
      ctx.measure('createP50Ms', percentile(latencies, 50));
      ctx.measure('createP95Ms', percentile(latencies, 95));
      ctx.measure('createMaxMs', Math.max(0, ...latencies));
      ctx.measure('queueMetrics', queue ?? 'none exposed');
      if (refusals.length > 0) ctx.measure('refusalExample', refusals[0] as string);
      tally.report(ctx);
      if (slow > 0) fail(`${slow} of ${backpressureTasks} creates took longer than maxCreateMs (${maxCreateMs} ms) with slow tasks outstanding`);
    },
  }),
];
