import type { Logger } from './logger.js';
import type { TaskEvent, TaskEventListener } from './ports/feed.js';

/**
 * The `onEvent` listeners of one store, shared by every backend: a listener that throws is logged and neither keeps
 * the others (nor the writer whose commit it is told about) from learning about the commit.
 */
export class TaskEventListeners {
  private readonly listeners = new Set<TaskEventListener>();

  constructor(private readonly logger: Logger) {}

  /** Add `listener`; returns the function that removes it. */
  add(listener: TaskEventListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** Hand committed `events` (in commit order) to every listener. */
  publish(events: readonly TaskEvent[]): void {
    for (const event of events) {
      for (const listener of [...this.listeners]) {
        try {
          listener(event);
        } catch (error) {
          this.logger.error({ err: error, kind: event.kind }, 'task event listener threw');
        }
      }
    }
  }

  clear(): void {
    this.listeners.clear();
  }
}
