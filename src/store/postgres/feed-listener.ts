import pg from 'pg';

import type { Logger } from '../../core/logger.js';
import type { CommitWatcher } from '../../core/store.js';
import { FEED_CHANNEL } from './migrations.js';

/** First and longest pause before the LISTEN connection is opened again after it failed (ms). */
const FIRST_RETRY_MS = 100;
const LONGEST_RETRY_MS = 5_000;

/** What {@link listenForCommits} needs. */
export interface FeedListenerOptions {
  url: string;
  connectTimeoutMs: number;
  /** `application_name` of the LISTEN connection (operators and tests find it in `pg_stat_activity`). */
  applicationName: string;
  logger: Logger;
}

/**
 * A dedicated connection (outside the pool: a pooled one would lose its LISTEN when returned) that runs
 * `LISTEN mcp_tasks_feed` and calls `wake(lastSeq)` for every commit that appended events, in any process. When the
 * connection drops (server restart, `pg_terminate_backend`, network), it reconnects with exponential backoff
 * (100 ms doubling to 5 s, jittered) and calls `wake(undefined)` once it listens again, because commits made while
 * it was away sent notifications nobody received. The reader's poll fallback covers the time in between, so a
 * dropped connection delays a wake-up by at most one poll interval and loses none.
 * @returns the function that stops listening and closes the connection.
 */
export function listenForCommits(options: FeedListenerOptions, wake: CommitWatcher): () => Promise<void> {
  let client: pg.Client | undefined;
  let stopped = false;
  let retryMs = FIRST_RETRY_MS;
  let retryTimer: NodeJS.Timeout | undefined;
  let connecting: Promise<void> | undefined;

  const retryLater = (): void => {
    if (stopped || retryTimer) return;
    const delay = Math.round(retryMs * (0.5 + Math.random() / 2));
    retryMs = Math.min(retryMs * 2, LONGEST_RETRY_MS);
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      connecting = connect();
    }, delay);
    retryTimer.unref();
  };

  const connect = async (): Promise<void> => {
    const next = new pg.Client({
      connectionString: options.url,
      connectionTimeoutMillis: options.connectTimeoutMs,
      application_name: options.applicationName,
      keepAlive: true,
    });
    let lost = false;
    const onLost = (error?: Error): void => {
      if (lost) return;
      lost = true;
      if (client === next) client = undefined;
      void next.end().catch(() => undefined);
      if (stopped) return;
      options.logger.warn({ err: error }, 'event feed LISTEN connection lost; polling until it is back');
      retryLater();
    };
    next.on('error', onLost);
    next.on('end', () => onLost());
    next.on('notification', (message) => {
      if (message.channel !== FEED_CHANNEL) return;
      const seq = Number(message.payload);
      wake(Number.isSafeInteger(seq) ? seq : undefined);
    });
    try {
      await next.connect();
      await next.query(`LISTEN ${FEED_CHANNEL}`);
    } catch (error) {
      onLost(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    if (stopped || lost) {
      await next.end().catch(() => undefined);
      return;
    }
    client = next;
    retryMs = FIRST_RETRY_MS;
    // Notifications sent while no connection listened are gone: catch up once.
    wake(undefined);
  };

  connecting = connect();
  return async () => {
    stopped = true;
    if (retryTimer) clearTimeout(retryTimer);
    await connecting?.catch(() => undefined);
    const last = client;
    client = undefined;
    await last?.end().catch(() => undefined);
  };
}
