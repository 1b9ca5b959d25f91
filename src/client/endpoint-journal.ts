/**
 * The journal as one connected {@link TasksClient} uses it: every write is best effort (the call matters more than
 * its evidence), and reads and removals touch only entries of this client's endpoint and generation — a client
 * connected to another URL must never erase or resume another endpoint's task.
 */
import type { JournalEntry, PendingCallEntry, TaskJournal } from './journal.js';
import type { CallIdentity, TaskGeneration, TaskSnapshot } from './types.js';

export class EndpointJournal {
  constructor(
    private readonly journal: TaskJournal | undefined,
    private readonly endpoint: { url: string; protocolVersion: string; generation: TaskGeneration | null },
  ) {}

  /** Record a call about to be sent (evidence for `resume` should its answer never arrive). */
  async addPending(pending: PendingCallEntry): Promise<void> {
    await this.journal?.addPending(pending).catch(() => {});
  }

  /** Drop a pending call: answered, refused, or not safe to resend. */
  async removePending(correlationId: string): Promise<void> {
    await this.journal?.removePending(correlationId).catch(() => false);
  }

  /**
   * Journal a created task (settling its pending call in the same write).
   * @returns whether it was journaled (the task exists whatever happens to the journal).
   */
  async record(task: TaskSnapshot, tool: string, generation: TaskGeneration, identity: CallIdentity): Promise<boolean> {
    if (!this.journal) return false;
    try {
      const entry: JournalEntry = {
        taskId: task.taskId,
        url: this.endpoint.url,
        generation,
        protocolVersion: this.endpoint.protocolVersion,
        tool,
        createdAt: task.createdAt,
        ...identity,
        lastStatus: task.status,
        lastUpdatedAt: task.lastUpdatedAt,
        observedAt: new Date().toISOString(),
      };
      await this.journal.add(entry, identity.correlationId);
      return true;
    } catch {
      return false;
    }
  }

  /** The entry of `taskId` whatever its endpoint (`undefined` when none, or the journal cannot be read). */
  async any(taskId: string): Promise<JournalEntry | undefined> {
    return this.journal?.get(taskId).catch(() => undefined);
  }

  /** The entry of `taskId` if it belongs to this endpoint and generation. */
  async own(taskId: string): Promise<JournalEntry | undefined> {
    const entry = await this.any(taskId);
    return entry && this.owns(entry) ? entry : undefined;
  }

  /** Whether `entry` was written for this endpoint and generation. */
  owns(entry: JournalEntry): boolean {
    return entry.url === this.endpoint.url && entry.generation === this.endpoint.generation;
  }

  /** Drop `taskId` — only an entry of this endpoint and generation (best effort: a stale entry only costs a failed resume). */
  async forget(taskId: string): Promise<void> {
    if (!this.journal) return;
    try {
      const entry = await this.journal.get(taskId);
      if (entry && this.owns(entry)) await this.journal.remove(taskId);
    } catch {
      // Best effort.
    }
  }
}
