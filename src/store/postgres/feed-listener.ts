import pg from 'pg';

import type { Logger } from '../../core/logger.js';
import type { CommitWatcher, TaskEvent } from '../../core/store.js';
import { toEvent } from '../codec.js';
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

/** Seq, task id, kind, status, at, payload text: one event of a notification (see `FEED_CHANNEL`). */
type NotifiedEvent = [number, string, string, string, number, string | null];

/**
 * A notification's payload (see `FEED_CHANNEL`): the counter, and the events when the payload carries them. Anything
 * else (a counter alone, a payload of an older or newer version, a malformed one) yields no events, so the reader
 * reads the feed as it would without them.
 */
export function parseNotification(payload: string | undefined): { lastSeq: number | undefined; events?: TaskEvent[] } {
  if (payload === undefined) return { lastSeq: undefined };
  if (!payload.startsWith('{')) {
    const seq = Number(payload);
    return { lastSeq: Number.isSafeInteger(seq) ? seq : undefined };
  }
  try {
    const body = JSON.parse(payload) as { s?: unknown; e?: unknown };
    const lastSeq = typeof body.s === 'number' && Number.isSafeInteger(body.s) ? body.s : undefined;
    if (lastSeq === undefined || !Array.isArray(body.e)) return { lastSeq };
    const events = (body.e as NotifiedEvent[]).map(([seq, task_id, kind, status, at, eventPayload]) =>
      toEvent({ seq, task_id, kind, status, at, payload: eventPayload }),
    );
    const ordered = events.every((event, i) => Number.isSafeInteger(event.seq) && (i === 0 || event.seq === (events[i - 1] as TaskEvent).seq + 1));
    return ordered && events.at(-1)?.seq === lastSeq ? { lastSeq, events } : { lastSeq };
  } catch {
    return { lastSeq: undefined };
  }
}

/**
 * A dedicated connection (outside the pool: a pooled one would lose its LISTEN when returned) that runs
 * `LISTEN mcp_tasks_feed` and calls `wake(lastSeq, events)` for every commit that appended events, in any process. When the
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
      const { lastSeq, events } = parseNotification(message.payload);
      wake(lastSeq, events);
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
