import type { TaskEvent, TaskEventListener, TaskFeed } from '../../core/ports/feed.js';
import { toLimit } from '../../core/store-rules.js';
import { toEvent } from '../codec.js';
import type { SqliteContext } from './context.js';
import type { EventRow } from './sql.js';

/**
 * The event feed on SQLite (see {@link TaskFeed}): `task_events` read by statement, listeners of this store told after
 * each group commit. No `watchCommits`: other processes' commits are found by polling `readEventsAfter`.
 */
export class SqliteFeed implements TaskFeed {
  constructor(private readonly ctx: SqliteContext) {}

  async listTaskEvents(taskId: string, limit: number): Promise<TaskEvent[]> {
    const rows = await this.ctx.readDurable('read task events', () => this.ctx.stmt.taskEvents.all({ taskId, limit: toLimit(limit) }));
    return (rows as EventRow[]).map(toEvent);
  }

  async readEventsAfter(afterSeq: number, limit: number): Promise<TaskEvent[]> {
    const rows = await this.ctx.readDurable('read events', () => this.ctx.stmt.eventsAfter.all({ afterSeq, limit: toLimit(limit) }));
    return (rows as EventRow[]).map(toEvent);
  }

  async lastEventSeq(): Promise<number> {
    return ((await this.ctx.readDurable('read events', () => this.ctx.stmt.lastEventSeq.get())) as { seq: number }).seq;
  }

  onEvent(listener: TaskEventListener): () => void {
    return this.ctx.listeners.add(listener);
  }
}
