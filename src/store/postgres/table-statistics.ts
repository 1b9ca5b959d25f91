import type pg from 'pg';

import type { Logger } from '../../core/logger.js';
import type { TaskEvent } from '../../core/ports/feed.js';
import { withPooledClient } from './connection.js';
import { SCHEMA } from './migrations.js';

/** The feed seq of the first growth mark; the next marks double it (2,048, 4,096, …). */
export const FIRST_GROWTH_MARK = 1024;

/** The store's tables that grow with the tasks: the plans of the statements that read them depend on their size. */
const GROWING_TABLES = [
  'tasks',
  'task_outcomes',
  'task_events',
  'input_requests',
  'task_steps',
  'tool_state',
  'idempotency_keys',
  'operations',
  'audit_log',
  'sessions',
  'owner_creates',
  'result_chunks',
];

/**
 * Tables of a row or a few, forever. Never analyzed, PostgreSQL takes a table to hold ten pages of rows (a couple
 * of thousand for the feed counter), and autovacuum may not analyze them for minutes: with the one-row `task_feed`
 * counter estimated at ~2,000 rows, every plan of the batch of creates that joins it looked costly, so PostgreSQL
 * never kept the generic one and planned the create anew on every batch (issue 25: ~0.55 ms of server CPU each).
 */
const SMALL_TABLES = ['task_feed', 'processes', 'draining_processes', 'kill_switches', 'server_secret'];

/**
 * Whether a commit whose events hold the feed seqs `first`…`last` (inclusive) crosses a growth mark
 * (`FIRST_GROWTH_MARK · 2^k`, k ≥ 0). Seqs are gap-free across every process of a database, so exactly one commit
 * in the whole deployment crosses each mark.
 */
export function crossesGrowthMark(first: number, last: number): boolean {
  for (let mark = FIRST_GROWTH_MARK; mark <= last; mark *= 2) if (mark >= first) return true;
  return false;
}

/**
 * Keeps the planner's statistics in step with a database that is still young: `ANALYZE` of the store's small tables
 * when the store opens, and of all its tables each time one of this store's commits crosses a growth mark of the
 * event feed.
 *
 * Why: node-postgres runs our statements as named prepared statements, and PostgreSQL switches a prepared
 * statement to a generic plan after five executions, costed on the statistics of that moment. A store starts on
 * empty, never-analyzed tables, so the generic plans cached in the first seconds were made for a handful of rows —
 * measured in issue 25: the scoped task read walked `tasks_by_owner` over every task of the owner (thousands of
 * index tuples per read) and the transition's current-row read scanned the whole `tasks` table, until autovacuum's
 * first `ANALYZE` (a minute or more later on a busy start, never on a database below its threshold). An `ANALYZE`
 * invalidates the cached plans that depend on the table in every connection of every process, so the next execution
 * plans again on the real sizes. Doubling marks keep the cost logarithmic in the feed's length (each analyze samples
 * at most `300 × default_statistics_target` rows per table); beyond them autovacuum's own rule keeps up. The small
 * tables: see {@link SMALL_TABLES}.
 *
 * One analyze at a time; a mark crossed while one runs starts one more (of all tables) after it. Failure (a role
 * that does not own the tables gets only a warning from PostgreSQL; PostgreSQL before 12 has no `SKIP_LOCKED`; a
 * lost connection) is logged and changes nothing else.
 */
export class TableStatistics {
  private running: Promise<void> | undefined;
  /** Tables to analyze after the analyze in flight (none: nothing asked meanwhile). */
  private next: readonly string[] | undefined;
  private stopped = false;
  /** The connection running the analyze in flight (its backend's pid is what `stop` cancels). */
  private analyzing: (pg.PoolClient & { processID?: number }) | undefined;
  /** The cancel `stop` sent, if any. */
  private cancelling: Promise<unknown> | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly logger: Logger,
  ) {}

  /**
   * The store has opened: analyze its small tables (a few rows each: milliseconds). Resolves when done or failed (a
   * failure is only logged); the store awaits it, so no statement of the analyze lands among its callers' work.
   */
  opened(): Promise<void> {
    this.request(SMALL_TABLES, 'the store opened');
    return this.running ?? Promise.resolve();
  }

  /** Called with the events of every commit of this store, in seq order (the batcher's publish). */
  observe(events: readonly TaskEvent[]): void {
    const first = events[0];
    const last = events[events.length - 1];
    if (!first || !last || !crossesGrowthMark(first.seq, last.seq)) return;
    this.request([...GROWING_TABLES, ...SMALL_TABLES], `seq ${last.seq} crossed a growth mark`);
  }

  /**
   * Start no more analyzes and cancel the one in flight (`pg_cancel_backend`: on a large database an analyze takes
   * seconds, and a draining process must not wait for statistics); resolves when it has ended (the store closes its
   * pool then).
   */
  stop(): Promise<void> {
    this.stopped = true;
    const pid = this.analyzing?.processID;
    if (pid !== undefined && this.cancelling === undefined) {
      this.cancelling = this.pool.query('SELECT pg_cancel_backend($1)', [pid]).catch((error: unknown) => {
        this.logger.debug({ err: error }, 'could not cancel the analyze in flight; waiting for it');
      });
    }
    return this.running ?? Promise.resolve();
  }

  private request(tables: readonly string[], why: string): void {
    if (this.running) {
      this.next = this.next && this.next.length >= tables.length ? this.next : tables;
      return;
    }
    this.running = this.analyze(tables, why);
  }

  private async analyze(first: readonly string[], why: string): Promise<void> {
    let tables: readonly string[] | undefined = first;
    while (tables && !this.stopped) {
      this.next = undefined;
      const started = Date.now();
      try {
        const sql = `ANALYZE (SKIP_LOCKED) ${tables.map((table) => `${SCHEMA}.${table}`).join(', ')}`;
        await withPooledClient(this.pool, async (client) => {
          this.analyzing = client as pg.PoolClient & { processID?: number };
          try {
            // SKIP_LOCKED: a table another session is analyzing or altering is skipped, not waited for.
            await client.query(sql);
          } finally {
            this.analyzing = undefined;
            // A cancel sent for this analyze lands before the connection serves anyone else.
            await this.cancelling;
          }
        });
        this.logger.debug({ tables: tables.length, ms: Date.now() - started, why }, 'analyzed the task tables');
      } catch (error) {
        if (this.stopped) this.logger.debug({ err: error, why }, 'analyze of the task tables cancelled: the store is closing');
        else this.logger.warn({ err: error, why }, 'could not analyze the task tables; autovacuum will');
      }
      tables = this.next;
      why = 'asked again meanwhile';
    }
    this.running = undefined;
  }
}
