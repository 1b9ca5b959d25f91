import { randomUUID } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { z } from 'zod';

import type { TaskStatus } from '../protocol/types.js';
import { TaskIdSchema } from './server-fields.js';

/** One task the client created and has not delivered yet, enough to find it again after a crash. */
export interface JournalEntry {
  taskId: string;
  /** The MCP endpoint that owns the task. */
  url: string;
  generation: 'v1' | 'v2';
  /** The protocol version of the connection that created it (`2025-11-25` or `2026-07-28`). */
  protocolVersion: string;
  tool: string;
  /** The task's `createdAt` as the server sent it (ISO 8601). */
  createdAt: string;
  /** The idempotency key the call carried (`_meta["dev.mcp-tasks/idempotency-key"]`). */
  idempotencyKey?: string;
  /** The correlation id the call carried (`_meta["dev.mcp-tasks/correlation-id"]`). */
  correlationId?: string;
  /** The last status observed. */
  lastStatus?: TaskStatus;
  /** The task's `lastUpdatedAt` at that observation (ISO 8601, as the server sent it). */
  lastUpdatedAt?: string;
  /**
   * The run the last observed status belonged to (`_meta["dev.mcp-tasks/attempt"]`, 1 for the first), when the server
   * reported it: a later `resume` that sees a higher attempt says the server re-ran the task in between.
   */
  lastAttempt?: number;
  /** When this client made that observation (ISO 8601). */
  observedAt?: string;
  /** The earliest time the next status read is allowed (the server's interval plus jitter; ISO 8601). */
  nextPollAt?: string;
}

/**
 * A `tools/call` sent and not yet answered with a task or a result. Written before the call goes out, removed once
 * the answer arrived, so a crash in between leaves evidence: `resume` then retries it with the same idempotency key
 * when the server honours keys, and otherwise reports its outcome as unknown — it never re-sends blindly. The
 * arguments are kept (mode 0600, like the rest of the file) only for that retry.
 */
export interface PendingCallEntry {
  correlationId: string;
  idempotencyKey: string;
  url: string;
  generation: 'v1' | 'v2' | null;
  protocolVersion: string;
  tool: string;
  arguments: Record<string, unknown>;
  /** The v1 `task` parameter sent, if any (`{}` or `{ttl}`). */
  task?: Record<string, unknown>;
  /** When the call was sent (ISO 8601). */
  sentAt: string;
  /** The server declared that it honours idempotency keys when the call was sent. */
  idempotencyHonoured: boolean;
}

const STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'] as const;

// The task id is checked as the wire schemas check it: an entry an older client saved with an id this one refuses
// (a control character, a space, a role marker) is left out on read like any malformed entry, and gone with the next
// write — such a task cannot be followed any more (the server's answers carry the same id), and printing its id in
// `tasks` or a `resume` hint is what the check prevents. Every other entry of the file loads as before.
const EntrySchema = z.object({
  taskId: TaskIdSchema,
  url: z.string().min(1),
  generation: z.enum(['v1', 'v2']),
  protocolVersion: z.string(),
  tool: z.string(),
  createdAt: z.string(),
  idempotencyKey: z.string().optional(),
  correlationId: z.string().optional(),
  lastStatus: z.enum(STATUSES).optional(),
  lastUpdatedAt: z.string().optional(),
  lastAttempt: z.number().int().positive().optional(),
  observedAt: z.string().optional(),
  nextPollAt: z.string().optional(),
});
const PendingSchema = z.object({
  correlationId: z.string().min(1),
  idempotencyKey: z.string().min(1),
  url: z.string().min(1),
  generation: z.enum(['v1', 'v2']).nullable(),
  protocolVersion: z.string(),
  tool: z.string(),
  arguments: z.record(z.string(), z.unknown()),
  task: z.record(z.string(), z.unknown()).optional(),
  sentAt: z.string(),
  idempotencyHonoured: z.boolean(),
});
const FileSchema = z.object({ version: z.literal(1), tasks: z.array(z.unknown()), pending: z.array(z.unknown()).optional() });

interface Contents {
  tasks: JournalEntry[];
  pending: PendingCallEntry[];
}

const LOCK_STALE_MS = 10_000;
const LOCK_WAIT_MS = 5_000;
const LOCK_RETRY_MS = 15;

/**
 * A small JSON file of unfinished tasks (`{"version":1,"tasks":[…]}`), so a requestor can resume waiting after a
 * crash or restart. Entries are added as soon as a task id is known and removed once the outcome was delivered.
 * Writes go to a temporary file renamed over the journal (atomic on POSIX), under a lock file so concurrent CLI
 * processes do not lose each other's entries. Mode 0600: task ids can act as bearer capabilities (SEP-2663 E44).
 * Credentials are never stored.
 */
export class TaskJournal {
  /** Absolute path of the journal file. */
  readonly path: string;

  constructor(path: string) {
    this.path = resolve(path);
  }

  /** `MCP_TASKS_CLIENT_STATE` when set, else `~/.mcp-tasks/tasks.json`. */
  static defaultPath(env: NodeJS.ProcessEnv = process.env): string {
    return env.MCP_TASKS_CLIENT_STATE ? resolve(env.MCP_TASKS_CLIENT_STATE) : join(homedir(), '.mcp-tasks', 'tasks.json');
  }

  /** Every recorded task, oldest first. */
  async list(): Promise<JournalEntry[]> {
    return (await this.load()).tasks;
  }

  /** Calls sent whose answer never arrived (a crash in between), oldest first. */
  async listPending(): Promise<PendingCallEntry[]> {
    return (await this.load()).pending;
  }

  /** The entry for `taskId`, if recorded. */
  async get(taskId: string): Promise<JournalEntry | undefined> {
    return (await this.load()).tasks.find((entry) => entry.taskId === taskId);
  }

  /** Record a task (replacing an entry with the same id); `settles` names a pending call it answers, which is dropped in the same write. */
  async add(entry: JournalEntry, settles?: string): Promise<void> {
    const parsed = EntrySchema.parse(entry) as JournalEntry;
    await this.mutate(({ tasks, pending }) => ({
      tasks: [...tasks.filter((existing) => existing.taskId !== entry.taskId), parsed],
      pending: settles === undefined ? pending : pending.filter((call) => call.correlationId !== settles),
    }));
  }

  /** Merge an observation into a task's entry; nothing happens when it is not recorded. */
  async update(taskId: string, patch: Partial<Omit<JournalEntry, 'taskId'>>): Promise<void> {
    await this.mutate(({ tasks, pending }) => {
      const index = tasks.findIndex((entry) => entry.taskId === taskId);
      if (index < 0) return undefined;
      const next = [...tasks];
      next[index] = EntrySchema.parse({ ...tasks[index], ...patch, taskId }) as JournalEntry;
      return { tasks: next, pending };
    });
  }

  /** Forget a task; `false` when it was not recorded. */
  async remove(taskId: string): Promise<boolean> {
    let removed = false;
    await this.mutate(({ tasks, pending }) => {
      const kept = tasks.filter((entry) => entry.taskId !== taskId);
      removed = kept.length !== tasks.length;
      return removed ? { tasks: kept, pending } : undefined;
    });
    return removed;
  }

  /** Record a call about to be sent. */
  async addPending(call: PendingCallEntry): Promise<void> {
    const parsed = PendingSchema.parse(call) as PendingCallEntry;
    await this.mutate(({ tasks, pending }) => ({ tasks, pending: [...pending.filter((existing) => existing.correlationId !== call.correlationId), parsed] }));
  }

  /** Forget a pending call (answered, or reported); `false` when it was not recorded. */
  async removePending(correlationId: string): Promise<boolean> {
    let removed = false;
    await this.mutate(({ tasks, pending }) => {
      const kept = pending.filter((call) => call.correlationId !== correlationId);
      removed = kept.length !== pending.length;
      return removed ? { tasks, pending: kept } : undefined;
    });
    return removed;
  }

  private async load(): Promise<Contents> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { tasks: [], pending: [] };
      throw error;
    }
    let parsed: z.output<typeof FileSchema>;
    try {
      parsed = FileSchema.parse(JSON.parse(text));
    } catch {
      // Hand-edited or foreign content: keep it for inspection instead of overwriting it, and start afresh.
      await rename(this.path, `${this.path}.corrupt-${Date.now()}`).catch(() => {});
      return { tasks: [], pending: [] };
    }
    const valid = <T>(schema: z.ZodType<T>, items: unknown[]): T[] =>
      items.flatMap((item) => {
        const result = schema.safeParse(item);
        return result.success ? [result.data] : [];
      });
    return { tasks: valid(EntrySchema, parsed.tasks) as JournalEntry[], pending: valid(PendingSchema, parsed.pending ?? []) as PendingCallEntry[] };
  }

  /** Read-modify-write under the lock; `change` returns `undefined` to leave the file untouched. */
  private async mutate(change: (contents: Contents) => Contents | undefined): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    const release = await this.lock();
    try {
      const next = change(await this.load());
      if (next === undefined) return;
      const temporary = `${this.path}.${process.pid}.${randomUUID()}.tmp`;
      try {
        await writeFile(
          temporary,
          `${JSON.stringify({ version: 1, tasks: next.tasks, ...(next.pending.length > 0 ? { pending: next.pending } : {}) }, null, 2)}\n`,
          { mode: 0o600 },
        );
        await rename(temporary, this.path);
      } catch (error) {
        await rm(temporary, { force: true });
        throw error;
      }
    } finally {
      await release();
    }
  }

  private async lock(): Promise<() => Promise<void>> {
    const lockPath = `${this.path}.lock`;
    const giveUpAt = Date.now() + LOCK_WAIT_MS;
    for (;;) {
      try {
        const handle = await open(lockPath, 'wx', 0o600);
        try {
          await handle.writeFile(String(process.pid));
        } catch (error) {
          // A full disk (ENOSPC) lets the file be created but not written: an empty lock reads as one being written
          // right now, so left behind it would hold every later write for LOCK_WAIT_MS until it goes stale.
          await handle.close().catch(() => {});
          await rm(lockPath, { force: true });
          throw error;
        }
        await handle.close();
        return () => rm(lockPath, { force: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      // A lock left by a crashed process (kill -9 inside the critical section) is taken over at once when its holder
      // is gone, else once it is clearly older than any real critical section (a holder on another host, a reused pid).
      const age = await stat(lockPath).then(
        (info) => Date.now() - info.mtimeMs,
        () => 0,
      );
      if (age > LOCK_STALE_MS || !(await holderAlive(lockPath))) await rm(lockPath, { force: true });
      else if (Date.now() > giveUpAt) throw new Error(`journal ${this.path} is locked by another process (${lockPath})`);
      else await sleep(LOCK_RETRY_MS);
    }
  }
}

/** Whether the process whose pid a lock file holds still runs on this host (`true` when that cannot be told). */
async function holderAlive(lockPath: string): Promise<boolean> {
  const pid = Number(await readFile(lockPath, 'utf8').catch(() => ''));
  // An empty file is a lock being written right now (or by an older version): its holder is alive.
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
