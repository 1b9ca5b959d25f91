import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { TaskInputs } from '../core/ports/inputs.js';
import type { AuditStore } from '../core/ports/ledger.js';
import type { StoreMaintenance } from '../core/ports/maintenance.js';
import type { TaskRows } from '../core/ports/rows.js';

/** The ports a sweep uses: maintenance (expiry, compaction), the audit's retention, the input timeout (find, fail). */
export type SweeperStore = StoreMaintenance & AuditStore & Pick<TaskInputs, 'listWaitingSince'> & TaskRows;
import { failByRuntime } from './fail-task.js';

/** Timing of a {@link Sweeper}. Every duration is in milliseconds. */
export interface SweeperSettings {
  /** How often it sweeps. */
  sweepIntervalMs: number;
  /** A task waiting for input longer than this (since its last input activity) fails with `input_timeout`. */
  inputTimeoutMs: number;
  /** Audit entries older than this are deleted (the audit's own retention). @defaultValue 90 days */
  auditRetentionMs?: number;
}

/** Most tasks one sweep expires, and most waiting tasks it times out. */
const EXPIRE_BATCH = 500;
const TIMEOUT_BATCH = 100;
const DEFAULT_AUDIT_RETENTION_MS = 90 * 24 * 60 * 60 * 1000;

/**
 * Housekeeping every process may run, holding no lease and safe to run in many processes at once (each write is
 * conditional, and the PostgreSQL store sweeps with `SKIP LOCKED`): deletes tasks past their TTL (reads hide them
 * already; the sweep frees the rows and records `expired`, on the store's clock) and fails tasks that waited for
 * input longer than `inputTimeoutMs` (`data.reason: "input_timeout"`). Retention goes with expiry: a task's
 * events are deleted with it (its `expired` event a little later), and the store is asked to give freed space back
 * (`compact`: SQLite's incremental vacuum; PostgreSQL's autovacuum needs nothing). The audit trail has its own
 * retention (`auditRetentionMs`): it outlives the tasks it records.
 */
export class Sweeper {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;

  constructor(
    private readonly store: SweeperStore,
    private readonly settings: SweeperSettings,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /** Sweep every `sweepIntervalMs` until {@link close}. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.sweep(), this.settings.sweepIntervalMs);
    this.timer.unref();
  }

  /** One sweep (also callable directly, e.g. in tests); a sweep already running is joined, not repeated. */
  sweep(): Promise<void> {
    this.sweeping ??= this.sweepOnce().finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }

  /** Stop sweeping; waits for a sweep in progress. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.sweeping;
  }

  private async sweepOnce(): Promise<void> {
    try {
      const expired = await this.store.expireDue(EXPIRE_BATCH);
      if (expired.length > 0) await this.store.compact();
      await this.store.purgeAudit(this.clock.now() - (this.settings.auditRetentionMs ?? DEFAULT_AUDIT_RETENTION_MS), EXPIRE_BATCH);
      const { inputTimeoutMs } = this.settings;
      for (const record of await this.store.listWaitingSince(this.clock.now() - inputTimeoutMs, TIMEOUT_BATCH)) {
        await failByRuntime(this.store, record.taskId, 'input_timeout', `No answer to the task's input request within ${inputTimeoutMs} ms`, this.clock.now());
      }
    } catch (error) {
      this.logger.error({ err: error }, 'sweep failed; retrying at the next interval');
    }
  }
}
