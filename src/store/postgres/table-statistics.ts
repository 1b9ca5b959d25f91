import type pg from 'pg';

import type { Logger } from '../../core/logger.js';
import type { TaskEvent } from '../../core/ports/feed.js';
import { SCHEMA } from './migrations.js';

/** The feed seq of the first growth mark; the next marks double it (2,048, 4,096, …). */
export const FIRST_GROWTH_MARK = 1024;

/**
 * The store's tables that per-task statements read (the ones whose plans depend on their size); `processes`,
 * `server_secret`, `kill_switches` and `task_feed` stay a few rows forever and are left to autovacuum.
 */
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
 * Whether a commit whose events hold the feed seqs `first`…`last` (inclusive) crosses a growth mark
 * (`FIRST_GROWTH_MARK · 2^k`, k ≥ 0). Seqs are gap-free across every process of a database, so exactly one commit
 * in the whole deployment crosses each mark.
 */
export function crossesGrowthMark(first: number, last: number): boolean {
  for (let mark = FIRST_GROWTH_MARK; mark <= last; mark *= 2) if (mark >= first) return true;
  return false;
}

/**
 * Keeps the planner's statistics in step with a database that is still growing fast: `ANALYZE` of the store's
 * tables each time one of this store's commits crosses a growth mark of the event feed.
 *
 * Why: node-postgres runs our statements as named prepared statements, and PostgreSQL switches a prepared
 * statement to a generic plan after five executions, costed on the statistics of that moment. A store starts on
 * empty, never-analyzed tables, so the generic plans cached in the first seconds were made for a handful of rows —
 * measured in issue 25: the scoped task read walked `tasks_by_owner` over every task of the owner (thousands of
 * index tuples per read) and the transition's current-row read scanned the whole `tasks` table, until autovacuum's
 * first `ANALYZE` (a minute or more later on a busy start, never on a database below its threshold). An `ANALYZE`
 * invalidates the cached plans that depend on the table in every connection of every process, so the next execution
 * plans again on the real sizes. Doubling marks keep the cost logarithmic in the feed's length (each analyze samples
 * at most `300 × default_statistics_target` rows per table); beyond them autovacuum's own rule keeps up.
 *
 * One analyze at a time; a mark crossed while one runs starts one more after it. Failure (a role that does not own
 * the tables gets only a warning from PostgreSQL; a lost connection an error) is logged and changes nothing else.
 */
export class TableStatistics {
  private running: Promise<void> | undefined;
  private again = false;

  private stopped = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly logger: Logger,
  ) {}

  /** Called with the events of every commit of this store, in seq order (the batcher's publish). */
  observe(events: readonly TaskEvent[]): void {
    const first = events[0];
    const last = events[events.length - 1];
    if (!first || !last || !crossesGrowthMark(first.seq, last.seq)) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.analyze(last.seq);
  }

  /** Start no more analyzes; resolves when the one in flight, if any, has ended (the store closes its pool then). */
  stop(): Promise<void> {
    this.stopped = true;
    return this.running ?? Promise.resolve();
  }

  private async analyze(seq: number): Promise<void> {
    do {
      this.again = false;
      if (this.stopped) break;
      const started = Date.now();
      try {
        // SKIP_LOCKED: a table another session is analyzing or altering is skipped, not waited for.
        await this.pool.query(`ANALYZE (SKIP_LOCKED) ${GROWING_TABLES.map((table) => `${SCHEMA}.${table}`).join(', ')}`);
        this.logger.debug({ seq, ms: Date.now() - started }, 'analyzed the task tables at a growth mark of the feed');
      } catch (error) {
        this.logger.warn({ seq, err: error }, 'could not analyze the task tables; autovacuum will');
      }
    } while (this.again);
    this.running = undefined;
  }
}
