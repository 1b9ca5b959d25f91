import type { Settled } from './batch.js';

/**
 * Reads issued in one turn of the event loop, answered by one statement (issue 25).
 *
 * Why: on PostgreSQL every statement is a round trip on a socket — a write and a wake-up of a backend on each side,
 * which on a busy machine costs more than the indexed lookup itself. The requestor reads a batch of ends wakes (the
 * worker commits its ends in batches, and one commit wakes every `tasks/result` waiting on them) arrive together; one
 * statement with an array of keys answers them all, each with its own conditions, exactly as the one-key statement
 * would have.
 *
 * Flush: the first read schedules a flush on the next turn of the loop (`setImmediate`, as the write batcher does),
 * so every read issued in the same turn joins it; a lone read goes alone, with the one-key statement. No read waits
 * for another statement to end.
 *
 * Failures stay with their read, as when each read was a statement of its own: a row that cannot be decoded fails
 * its own read only (`many` settles each item), and a merged statement that fails for a reason `runsAlone` accepts
 * (anything but the database being unreachable) is run again one read at a time, so one read's bad input cannot fail
 * another requestor's read. A database that is unreachable fails every read of the statement at once, without
 * sending each again into the same outage.
 */
export class MergedReads<I, R> {
  private queue: Array<{ item: I; resolve: (value: R | undefined) => void; reject: (error: unknown) => void }> = [];
  private scheduled = false;

  /**
   * @param one - the read of a single item (its own statement)
   * @param many - the read of several items in one statement: one outcome per item, in item order (a value of
   *   `undefined` where nothing matched); a throw means the statement failed
   * @param maxItems - items per statement at most (a longer queue is cut into several statements)
   * @param runsAlone - whether the items of a failed merged statement are read again one at a time (given the error)
   */
  constructor(
    private readonly one: (item: I) => Promise<R | undefined>,
    private readonly many: (items: readonly I[]) => Promise<Array<Settled<R | undefined>>>,
    private readonly maxItems: number,
    private readonly runsAlone: (error: unknown) => boolean,
  ) {}

  /** The answer for `item`, from the statement of the turn it was issued in. */
  read(item: I): Promise<R | undefined> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    this.scheduled = false;
    const queued = this.queue;
    this.queue = [];
    for (let start = 0; start < queued.length; start += this.maxItems) {
      const part = queued.slice(start, start + this.maxItems);
      if (part.length === 1) {
        this.alone(part);
        continue;
      }
      this.many(part.map((entry) => entry.item)).then(
        (outcomes) =>
          part.forEach((entry, i) => {
            const outcome = outcomes[i];
            if (outcome === undefined || outcome.ok) entry.resolve(outcome?.value);
            else entry.reject(outcome.error);
          }),
        (error: unknown) => (this.runsAlone(error) ? this.alone(part) : part.forEach((entry) => entry.reject(error))),
      );
    }
  }

  private alone(entries: typeof this.queue): void {
    for (const entry of entries) this.one(entry.item).then(entry.resolve, entry.reject);
  }
}
