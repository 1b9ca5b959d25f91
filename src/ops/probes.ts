import type { IncomingMessage, ServerResponse } from 'node:http';

import type { Executor, ExecutorReadiness } from '../core/executor.js';
import { readyOn, type SchemaCompatibility } from '../core/schema-compatibility.js';
import type { TaskStore } from '../core/store.js';
import type { WorkerPresence, WorkerPresenceState } from '../service/worker-presence.js';
import type { TasksMetrics } from './metrics.js';
import type { KillSwitchCache, KillSwitchState } from './rollout/kill-switch.js';

/**
 * The operations endpoints of an API or worker process: `GET /healthz` (the process answers), `GET /readyz`
 * (ready to take traffic: the store answers within {@link STORE_CHECK_TIMEOUT_MS}, its schema is the one this code
 * expects or a newer one whose newer migrations are all marked compatible (a rolling deploy), the executor can start runs — the isolated executor has a warm thread and none failed to load the tools —
 * and the process is not draining; an API process without a worker also needs a worker process of its store to have
 * been live within `--worker-absent-ms`; the kill switch state is reported, never gating readiness) and `GET /metrics`
 * (Prometheus text). Kubernetes: liveness → /healthz, readiness → /readyz.
 */

/** Longest a readiness probe waits for the store (ms): a hung database is "not ready", not a hung probe. */
export const STORE_CHECK_TIMEOUT_MS = 2000;

/** What `/readyz` reports (the body, as JSON; HTTP 200 when `ready`, else 503). */
export interface Readiness {
  ready: boolean;
  role: string;
  instanceId: string | undefined;
  checks: {
    store: { ok: boolean; latencyMs: number; error?: string };
    /**
     * The schema judged against this code (`judgeSchema`): ok when current, or newer with every newer migration
     * marked compatible (`newer: 'compatible'`: a rolling deploy's newer code migrated it); not ok when a newer one is
     * breaking (`newer: 'breaking'`), the history is foreign, or the schema is older than this process left it —
     * `reason` says which.
     */
    migrations: { ok: boolean; applied?: number; expected?: number; newer?: 'compatible' | 'breaking'; reason?: string };
    draining: boolean;
    /** The executor's warm pool (see `ExecutorReadiness`); `{ ready: true, mode: 'in-process' }` without threads. */
    executor: ExecutorReadiness;
    /**
     * The stored kill switch as this process last read it (`unknown` before a first successful read). Reported,
     * not a readiness condition: a switched-off server still serves the tasks it has.
     */
    killSwitch: KillSwitchState;
    /**
     * An API process without a worker (`serve --no-worker`): whether a worker process of the store that takes tasks
     * (live, not draining) was seen within the configured window (`--worker-absent-ms`); not ready once none was for
     * longer (issue 26 item 6).
     */
    workers?: WorkerPresenceState;
  };
}

/** What the probes read. */
export interface ProbeSources {
  role: 'api' | 'worker' | 'serve';
  instanceId?: string | undefined;
  store: TaskStore;
  draining: () => boolean;
  metrics?: TasksMetrics | undefined;
  killSwitch: KillSwitchCache;
  /** The process's executor, whose readiness is a condition (absent: nothing to load). */
  executor?: Pick<Executor, 'readiness'> | undefined;
  /** An API process without a worker: whether workers of its store are live (a readiness condition). */
  workers?: Pick<WorkerPresence, 'state'> | undefined;
}

/** Check readiness now (see the module comment). Never throws. */
export async function checkReadiness(sources: ProbeSources): Promise<Readiness> {
  const started = performance.now();
  let store: Readiness['checks']['store'];
  let migrations: Readiness['checks']['migrations'] = { ok: false };
  let timer: NodeJS.Timeout | undefined;
  try {
    const status = await Promise.race([
      sources.store.schemaStatus(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${STORE_CHECK_TIMEOUT_MS} ms`)), STORE_CHECK_TIMEOUT_MS);
      }),
    ]);
    store = { ok: true, latencyMs: Math.round(performance.now() - started) };
    migrations = migrationsCheck(status);
  } catch (error) {
    store = { ok: false, latencyMs: Math.round(performance.now() - started), error: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
  }
  const draining = sources.draining();
  const executor = sources.executor?.readiness?.() ?? { ready: true, mode: 'in-process' };
  const workers = sources.workers?.state();
  return {
    ready: store.ok && migrations.ok && executor.ready && !draining && (workers?.ok ?? true),
    role: sources.role,
    instanceId: sources.instanceId,
    checks: { store, migrations, draining, executor, killSwitch: sources.killSwitch.state(), ...(workers ? { workers } : {}) },
  };
}

/** The `migrations` check of a schema so judged (see {@link Readiness}). */
function migrationsCheck(schema: SchemaCompatibility): Readiness['checks']['migrations'] {
  const { applied, expected } = schema;
  const ok = readyOn(schema);
  const newer = schema.state === 'newer-compatible' ? 'compatible' : schema.state === 'newer-breaking' ? 'breaking' : undefined;
  const reason =
    schema.problem ?? (ok ? undefined : `schema version ${applied} is older than this mcp-tasks (${expected}): its migrations are missing from the store`);
  return { ok, applied, expected, ...(newer ? { newer } : {}), ...(reason ? { reason } : {}) };
}

function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body));
}

/**
 * Answer `request` when it is one of the operations endpoints; `false` for any other path (the caller serves it).
 * Only GET (and HEAD) are answered; other methods on these paths get 405.
 */
export function handleProbe(sources: ProbeSources, request: IncomingMessage, response: ServerResponse): boolean {
  const path = new URL(request.url ?? '/', 'http://localhost').pathname;
  if (path !== '/healthz' && path !== '/readyz' && path !== '/metrics') return false;
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.writeHead(405, { allow: 'GET, HEAD' }).end();
    return true;
  }
  if (path === '/healthz') {
    json(response, 200, { status: sources.draining() ? 'draining' : 'ok', role: sources.role, instanceId: sources.instanceId });
    return true;
  }
  if (path === '/readyz') {
    void checkReadiness(sources).then((readiness) => json(response, readiness.ready ? 200 : 503, readiness));
    return true;
  }
  if (!sources.metrics) {
    json(response, 404, { error: 'metrics are off' });
    return true;
  }
  sources.metrics.exposition().then(
    ({ contentType, body }) => response.writeHead(200, { 'content-type': contentType }).end(body),
    (error: unknown) => json(response, 500, { error: error instanceof Error ? error.message : String(error) }),
  );
  return true;
}
