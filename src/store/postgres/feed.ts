import type { CommitWatcher, TaskEvent, TaskEventListener, TaskFeed } from '../../core/ports/feed.js';
import { toLimit } from '../../core/store-rules.js';
import { type EventRow, toEvent } from '../codec.js';
import type { PostgresContext } from './context.js';
import { listenForCommits } from './feed-listener.js';
import { SQL } from './sql.js';

/**
 * The event feed on PostgreSQL (see {@link TaskFeed}): `task_events` read on the pool, seqs from a commit-ordered
 * counter (so tails lose nothing), and pushes of other processes' commits over `LISTEN mcp_tasks_feed`.
 */
export class PostgresFeed implements TaskFeed {
  /** The stop functions of the watches still open; the store's `close` ends them. */
  readonly watchers = new Set<() => Promise<void>>();

  constructor(private readonly ctx: PostgresContext) {}

  async listTaskEvents(taskId: string, limit: number): Promise<TaskEvent[]> {
    return (await this.ctx.read<EventRow>('read task events', SQL.taskEvents, [taskId, toLimit(limit)])).map(toEvent);
  }

  async readEventsAfter(afterSeq: number, limit: number): Promise<TaskEvent[]> {
    return (await this.ctx.read<EventRow>('read events', SQL.eventsAfter, [afterSeq, toLimit(limit)])).map(toEvent);
  }

  async lastEventSeq(): Promise<number> {
    const [row] = await this.ctx.read<{ seq: number }>('read events', SQL.lastEventSeq, []);
    return row?.seq ?? 0;
  }

  onEvent(listener: TaskEventListener): () => void {
    return this.ctx.listeners.add(listener);
  }

  /**
   * Wake-ups for commits of any process on this database over one dedicated `LISTEN mcp_tasks_feed` connection
   * (`application_name` `<applicationName>-listen`), reconnecting with backoff; see {@link listenForCommits}.
   */
  watchCommits(wake: CommitWatcher): () => Promise<void> {
    const { connection } = this.ctx;
    const stop = listenForCommits(
      {
        url: connection.url,
        connectTimeoutMs: Math.max(1, Math.floor(connection.connectTimeoutMs ?? 5_000)),
        applicationName: `${connection.applicationName ?? 'mcp-tasks'}-listen`,
        logger: this.ctx.logger,
      },
      wake,
    );
    const unwatch = async (): Promise<void> => {
      this.watchers.delete(unwatch);
      await stop();
    };
    this.watchers.add(unwatch);
    return unwatch;
  }
}
