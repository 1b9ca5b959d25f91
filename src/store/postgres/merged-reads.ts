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
 */
export class MergedReads<I, R> {
  private queue: Array<{ item: I; resolve: (value: R | undefined) => void; reject: (error: unknown) => void }> = [];
  private scheduled = false;

  /**
   * @param one - the read of a single item (its own statement)
   * @param many - the read of several items in one statement: one answer per item, in item order (`undefined` where
   *   nothing matched); a throw rejects every item of the statement
   * @param maxItems - items per statement at most (a longer queue is cut into several statements)
   */
  constructor(
    private readonly one: (item: I) => Promise<R | undefined>,
    private readonly many: (items: readonly I[]) => Promise<Array<R | undefined>>,
    private readonly maxItems: number,
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
      const first = part[0] as (typeof part)[number];
      if (part.length === 1) {
        this.one(first.item).then(first.resolve, first.reject);
        continue;
      }
      this.many(part.map((entry) => entry.item)).then(
        (answers) => part.forEach((entry, i) => entry.resolve(answers[i])),
        (error: unknown) => part.forEach((entry) => entry.reject(error)),
      );
    }
  }
}
