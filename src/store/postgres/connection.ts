import pg from 'pg';

import type { Logger } from '../../core/logger.js';
import { StoreError } from '../../core/store-error.js';

/** Connection settings of a {@link PostgresTaskStore}. All durations in ms. */
export interface PostgresConnectionOptions {
  /** `postgres://user:password@host:port/database?…` (libpq URL; `sslmode` and friends as node-postgres reads them). */
  url: string;
  /** Connections at most (one write batch or read holds one). Default 10. */
  poolSize?: number;
  /** How long to wait for a connection (new or from the pool) before a call fails as `unavailable`. Default 5000. */
  connectTimeoutMs?: number;
  /**
   * Longest statement: the server cancels it (`statement_timeout`) and the client gives up shortly after, so a
   * call fails as `unavailable` instead of hanging on a dead server or a lock. Default 15000.
   */
  statementTimeoutMs?: number;
  /** `application_name` shown in `pg_stat_activity`. Default `mcp-tasks`. */
  applicationName?: string;
}

const INT8_OID = 20;

/**
 * `bigint` columns (times in epoch ms, seqs, TTLs) as JS numbers. They stay below 2^53: epoch ms for the next
 * 285,000 years, seqs far longer than any database lives.
 */
export const BIGINT_AS_NUMBER = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary' ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/** `connectTimeoutMs` when not given (ms). */
const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;

/**
 * A pool with the timeouts above. `idle_in_transaction_session_timeout` ends a session whose process froze inside a
 * transaction, so its row locks (and the event feed counter) cannot stay held. Errors of idle connections (server
 * restarted) are logged, never thrown: the pool replaces the connection on next use.
 */
export function createPool(options: PostgresConnectionOptions, logger: Logger): pg.Pool {
  const statementTimeoutMs = Math.max(1, Math.floor(options.statementTimeoutMs ?? 15_000));
  const pool = new pg.Pool({
    connectionString: options.url,
    max: Math.max(1, Math.floor(options.poolSize ?? 10)),
    connectionTimeoutMillis: Math.max(1, Math.floor(options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS)),
    idleTimeoutMillis: 30_000,
    statement_timeout: statementTimeoutMs,
    // Client side, a little later than the server's own cancel, for a server that no longer answers at all.
    query_timeout: statementTimeoutMs + 2_000,
    idle_in_transaction_session_timeout: Math.max(statementTimeoutMs * 2, 10_000),
    application_name: options.applicationName ?? 'mcp-tasks',
    keepAlive: true,
    types: BIGINT_AS_NUMBER,
  });
  pool.on('error', (error) => logger.warn({ err: error }, 'idle PostgreSQL connection failed; it is replaced on next use'));
  return pool;
}

/**
 * The connections of a process's liveness writes (heartbeat, lease renewals), apart from the store's pool: that pool
 * can be held for seconds (result chunks written while their task row is locked, large reads, a stalled batch), and a
 * heartbeat that waited past the registration's TTL got the process reaped by the others and its running tasks claimed
 * while they still ran (issue 25). The heartbeat has a connection of its own, so a renewal waiting on a task row lock
 * does not hold it up; renewals share two. Shown as `<application name>-liveness` in `pg_stat_activity`.
 */
export interface LivenessPools {
  /** One connection: a process sends one heartbeat at a time. */
  readonly heartbeat: pg.Pool;
  /** Two connections: the periodic renewal and a retake of one lease may overlap. */
  readonly renewal: pg.Pool;
}

/**
 * Longest wait for a liveness connection before the write goes on the store's pool (ms): well inside a registration's
 * lifetime (three heartbeats, 3 s at the defaults), where the pool's own `connectTimeoutMs` (5 s) is not — a connect
 * that hangs (a network path that accepts and never answers) must not make the heartbeat late. The connect itself
 * goes on, up to {@link LIVENESS_CONNECT_TIMEOUT_MS}: a server slower than this to connect to (far away, TLS and
 * SCRAM) still gets its liveness connection, for the next writes.
 */
export const LIVENESS_CONNECT_WAIT_MS = 1_000;

/**
 * Longest a liveness connect goes on (ms; `connectTimeoutMs` when lower): the store's close waits for a connect in
 * flight, and one that hangs must not hold a shutdown for the pool's whole connect timeout. The trade-off: a server
 * slower than this to connect to never keeps a liveness connection, and every liveness write goes on the store's
 * pool after its 1 s wait (as before these pools existed), starting a new connect each time.
 */
export const LIVENESS_CONNECT_TIMEOUT_MS = 3_000;

/** {@link LivenessPools} with the timeouts of `options` (see {@link createPool}), connecting within {@link LIVENESS_CONNECT_TIMEOUT_MS}. */
export function createLivenessPools(options: PostgresConnectionOptions, logger: Logger): LivenessPools {
  const applicationName = `${options.applicationName ?? 'mcp-tasks'}-liveness`;
  const connectTimeoutMs = Math.min(options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, LIVENESS_CONNECT_TIMEOUT_MS);
  return {
    heartbeat: createPool({ ...options, connectTimeoutMs, poolSize: 1, applicationName }, logger),
    renewal: createPool({ ...options, connectTimeoutMs, poolSize: 2, applicationName }, logger),
  };
}

/**
 * Run `work` on a client checked out of `pool`, then release it. Checked out, a client has no pool listener: a
 * connection lost meanwhile must reject the query in flight, not end the process as an unhandled 'error' event, so
 * it gets a listener until released, and a connection that broke is destroyed rather than handed to the next caller.
 * A failed checkout rejects with `onConnectError(error)` (default: the error itself); `work`'s errors pass through.
 * `work` gets `broken(error)` to have the client destroyed on release for a reason the connection did not report (a
 * ROLLBACK that failed). With `connectWithinMs`, a checkout that takes longer fails as a failed checkout does, and its
 * connect goes on for the pool (see `checkout`).
 */
export async function withPooledClient<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient, broken: (error: Error) => void) => Promise<T>,
  onConnectError: (error: unknown) => unknown = (error) => error,
  connectWithinMs?: number,
): Promise<T> {
  const client = await checkout(pool, connectWithinMs).catch((error: unknown) => {
    throw onConnectError(error);
  });
  let lost: Error | undefined;
  const onError = (error: Error): void => {
    lost = error;
  };
  client.on('error', onError);
  try {
    return await work(client, onError);
  } finally {
    client.removeListener('error', onError);
    client.release(lost);
  }
}

/**
 * A client of `pool`; with `withinMs`, rejects once that long has passed without one, leaving the connect to go on:
 * the connection it opens joins the pool for the next caller (a slow connect is not thrown away and started again).
 */
async function checkout(pool: pg.Pool, withinMs: number | undefined): Promise<pg.PoolClient> {
  const connecting = pool.connect();
  if (withinMs === undefined) return connecting;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), withinMs)));
  try {
    const client = await Promise.race([connecting, late]);
    if (client !== undefined) return client;
  } finally {
    clearTimeout(timer);
  }
  connecting.then(
    (client) => client.release(),
    () => undefined,
  );
  throw new Error(`no connection within ${withinMs} ms`);
}

/** Node socket errors that mean "the server is not there (any more)". */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED']);

/**
 * SQLSTATEs that mean the server is unavailable or gave up on us: class 08 (connection exception), 53300
 * (too many connections), 57014 (statement_timeout), 57P01–57P03 (shutdown, crash, not accepting connections yet).
 */
function unavailableSqlState(code: string): boolean {
  return code.startsWith('08') || code === '53300' || code === '57014' || code === '57P01' || code === '57P02' || code === '57P03';
}

/** Messages node-postgres uses for connection loss and its own timeouts (they carry no code). */
const UNAVAILABLE_MESSAGES =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|Query read timeout|not queryable|Client was closed|Connection ended/i;

/** Whether `error` (from node-postgres) means the database is unreachable or too slow, rather than a SQL fault. */
export function isUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || unavailableSqlState(code))) return true;
  return error instanceof Error && UNAVAILABLE_MESSAGES.test(error.message);
}

/** Deadlock and serialization failures: PostgreSQL rolled the statement or transaction back; running it again is safe. */
const CONFLICT_STATES = new Set(['40P01', '40001']);
/** Times a write that failed with a {@link isRetryableConflict} error is run again (the batch, a write outside it). */
export const CONFLICT_RETRIES = 3;

/** Whether `error` (a driver error) is a deadlock or serialization failure, which a rerun of the same write may pass. */
export function isRetryableConflict(error: unknown): boolean {
  const state = sqlState(error);
  return state !== undefined && CONFLICT_STATES.has(state);
}

/** SQLSTATE of a driver error, if any. */
export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * A driver error as the store's {@link StoreError} (the driver error as `cause`): `unavailable` for connection
 * loss and timeouts, `fault` for anything else. A {@link StoreError} passes through unchanged.
 */
export function toStoreError(error: unknown, action: string): StoreError {
  if (error instanceof StoreError) return error;
  const detail = error instanceof Error ? error.message : String(error);
  if (isUnavailable(error)) return new StoreError('unavailable', `Task store unavailable: cannot ${action} (${detail})`, { cause: error });
  return new StoreError('fault', `Task store failed to ${action}: ${detail}`, {
    cause: error,
    requestorMessage: `Task store failed to ${action}`,
    // 53100 disk_full: the database server has no room for the write (class 53's others pass: memory, connections).
    outOfSpace: sqlState(error) === '53100',
  });
}
