import { randomUUID } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';

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
}

const EntrySchema = z.object({
  taskId: z.string().min(1),
  url: z.string().min(1),
  generation: z.enum(['v1', 'v2']),
  protocolVersion: z.string(),
  tool: z.string(),
  createdAt: z.string(),
});
const FileSchema = z.object({ version: z.literal(1), tasks: z.array(z.unknown()) });

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
    return this.load();
  }

  /** The entry for `taskId`, if recorded. */
  async get(taskId: string): Promise<JournalEntry | undefined> {
    return (await this.load()).find((entry) => entry.taskId === taskId);
  }

  /** Record a task (replacing an entry with the same id). */
  async add(entry: JournalEntry): Promise<void> {
    await this.mutate((entries) => [...entries.filter((existing) => existing.taskId !== entry.taskId), EntrySchema.parse(entry)]);
  }

  /** Forget a task; `false` when it was not recorded. */
  async remove(taskId: string): Promise<boolean> {
    let removed = false;
    await this.mutate((entries) => {
      const kept = entries.filter((entry) => entry.taskId !== taskId);
      removed = kept.length !== entries.length;
      return removed ? kept : undefined;
    });
    return removed;
  }

  private async load(): Promise<JournalEntry[]> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    let parsed: z.output<typeof FileSchema>;
    try {
      parsed = FileSchema.parse(JSON.parse(text));
    } catch {
      // Hand-edited or foreign content: keep it for inspection instead of overwriting it, and start afresh.
      await rename(this.path, `${this.path}.corrupt-${Date.now()}`).catch(() => {});
      return [];
    }
    return parsed.tasks.flatMap((entry) => {
      const valid = EntrySchema.safeParse(entry);
      return valid.success ? [valid.data] : [];
    });
  }

  /** Read-modify-write under the lock; `change` returns `undefined` to leave the file untouched. */
  private async mutate(change: (entries: JournalEntry[]) => JournalEntry[] | undefined): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    const release = await this.lock();
    try {
      const next = change(await this.load());
      if (next === undefined) return;
      const temporary = `${this.path}.${process.pid}.${randomUUID()}.tmp`;
      try {
        await writeFile(temporary, `${JSON.stringify({ version: 1, tasks: next }, null, 2)}\n`, { mode: 0o600 });
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
        await handle.close();
        return () => rm(lockPath, { force: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      // A lock left by a crashed process is taken over once it is clearly older than any real critical section.
      const age = await stat(lockPath).then((info) => Date.now() - info.mtimeMs, () => 0);
      if (age > LOCK_STALE_MS) await rm(lockPath, { force: true });
      else if (Date.now() > giveUpAt) throw new Error(`journal ${this.path} is locked by another process (${lockPath})`);
      else await sleep(LOCK_RETRY_MS);
    }
  }
}
