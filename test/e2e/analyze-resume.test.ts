/**
 * Issue 17: a long analyze_logs scan survives `kill -9` of a real server. The restarted server re-runs the task,
 * merges the parts journaled in the task store (a real SQLite file) and reads only the files not done: counted
 * with a preload that records every file the server process opens (test/fixtures/open-recorder.mjs, no flag in
 * the product). Progress goes on from the completed count.
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';

import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';

import { writeDemoCorpus } from '../../src/tools/demo-corpus.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { postModern } from '../helpers/wire.js';

const RECORDER = resolve(import.meta.dirname, '../fixtures/open-recorder.mjs');
const FILES = 24;

type Part = { kind: string; files?: { path: string; done: boolean }[]; next?: { index: number } };

/** The journaled parts of a task, read from the server's SQLite file. */
function journaledParts(dbPath: string, taskId: string): Part[] {
  if (!existsSync(dbPath)) return [];
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare('SELECT name, value FROM task_steps WHERE task_id = ? ORDER BY name').all(taskId) as { name: string; value: string }[];
    return rows
      .filter((row) => row.name.startsWith('analyze_logs/part-'))
      .map((row) => JSON.parse(row.value) as Part)
      .filter((part) => part.kind === 'part');
  } finally {
    db.close();
  }
}

/** The statusMessage the store holds for a task. */
function staleStatus(dbPath: string, taskId: string): string | null {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT status_message FROM tasks WHERE task_id = ?').get(taskId) as { status_message: string | null }).status_message;
  } finally {
    db.close();
  }
}

const opened = (log: string, root: string) =>
  existsSync(log)
    ? readFileSync(log, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((file) => relative(root, file))
    : [];

describe('analyze_logs after kill -9 (real processes, real SQLite file)', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('re-runs the scan from the last journaled part without opening completed files, progress going on from their count', async () => {
    const temp = makeTempDir('analyze-resume-');
    cleanups.push(() => temp.remove());
    const root = join(realpathSync(temp.dir), 'logs');
    await mkdir(root);
    const written = await writeDemoCorpus({ out: root, files: FILES, lines: 1500, seed: 11 });
    const dataDir = join(temp.dir, 'data');
    const args = ['--root', root, '--lease-ms', '800'];
    const recorder = (log: string, delayMs: number) => ({
      NODE_OPTIONS: `--import=${RECORDER}`,
      OPEN_RECORD_UNDER: root,
      OPEN_RECORD_LOG: log,
      OPEN_RECORD_DELAY_MS: String(delayMs),
    });
    const firstLog = join(temp.dir, 'opened-1.log');
    // 450 ms per file open: the first part is journaled after 5 s, about eleven files in.
    const first: ServerProcess = await startServerProcess(dataDir, args, recorder(firstLog, 450));
    cleanups.push(() => first.stop());
    const created = await postModern(first.url, 'tools/call', { name: 'analyze_logs', arguments: { path: root } });
    const taskId = created.body.result?.taskId as string;
    expect(typeof taskId).toBe('string');

    const dbPath = join(dataDir, 'tasks.db');
    await expect.poll(() => journaledParts(dbPath, taskId).length, { timeout: 20_000, interval: 100 }).toBeGreaterThanOrEqual(1);
    await first.kill9();
    const parts = journaledParts(dbPath, taskId);
    const done = parts
      .flatMap((part) => part.files ?? [])
      .filter((file) => file.done)
      .map((file) => file.path);
    expect(done.length).toBeGreaterThan(0);
    expect(done.length).toBeLessThan(FILES);
    // The first run opened the completed files (and perhaps one more, the one it was in).
    for (const file of done) expect(opened(firstLog, root)).toContain(file);

    const secondLog = join(temp.dir, 'opened-2.log');
    const second = await startServerProcess(dataDir, args, recorder(secondLog, 100));
    cleanups.push(() => second.stop());
    // Progress as a client sees it: "scanned files (k/24)" never goes back below the completed count once the
    // second run reports (before that, the message the first run last stored is shown).
    const stale = staleStatus(dbPath, taskId);
    const seen: number[] = [];
    let result: Record<string, unknown> | undefined;
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 20))) {
      const task = (await postModern(second.url, 'tasks/get', { taskId })).body.result as Record<string, unknown>;
      const progress = /scanned files \((\d+)\/(\d+)\)/.exec(String(task.statusMessage ?? ''));
      if (progress && (seen.length > 0 || task.statusMessage !== stale)) seen.push(Number(progress[1]));
      if (['completed', 'failed', 'cancelled'].includes(String(task.status))) {
        result = task;
        break;
      }
    }
    expect(result?.status).toBe('completed');
    expect(seen.length).toBeGreaterThan(0);
    expect(Math.min(...seen)).toBeGreaterThanOrEqual(done.length);
    const report = (result?.result as { structuredContent: Record<string, unknown> }).structuredContent;
    expect(report).toMatchObject({ files: FILES, lines: written.lines, resumedParts: parts.length });

    const reopened = opened(secondLog, root);
    for (const file of done) expect(reopened, `${file} was completed before the kill`).not.toContain(file);
    // Every file not completed was read by the second run, once.
    expect(new Set(reopened).size).toBe(reopened.length);
    expect(reopened.length).toBe(FILES - done.length);
  }, 120_000);
});
