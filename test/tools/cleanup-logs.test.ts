import { appendFile, mkdir, readdir, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import type { JsonObject, JsonValue } from '../../src/core/task.js';
import { type ElicitRequest, type ElicitResult, type OperationSpec, ToolInputError, type ToolResult } from '../../src/core/tool.js';
import { cleanupLogsTool } from '../../src/tools/index.js';
import { makeContext, makeTempDir } from './helpers.js';

/**
 * `cleanup_logs` called directly with a hand-built context: the journal of `ctx.step` is a Map the test can keep
 * between runs (as the runtime keeps it between re-runs of a task), and `ctx.elicit` answers from a script.
 */

const DAY_MS = 86_400_000;
const OLD = new Date(Date.now() - 30 * DAY_MS);

/**
 * A tool context whose steps are journaled in `journal`, whose confirmed operations are kept there too (under
 * `op:<key>`, like the ledger replays a confirmed operation) and whose question is answered by `answer`.
 */
function cleanupContext(roots: string[], journal: Map<string, JsonValue>, answer: (request: ElicitRequest) => ElicitResult | Promise<ElicitResult>) {
  const context = makeContext(roots);
  const asked: ElicitRequest[] = [];
  const ran: string[] = [];
  return Object.assign(context, {
    asked,
    ran,
    async step<T extends JsonValue>(name: string, fn: () => T | Promise<T>): Promise<T> {
      if (journal.has(name)) return journal.get(name) as T;
      ran.push(name);
      const value = await fn();
      journal.set(name, JSON.parse(JSON.stringify(value)) as JsonValue); // stored as JSON, like the store does
      return value;
    },
    async elicit(request: ElicitRequest): Promise<ElicitResult> {
      asked.push(request);
      return answer(request);
    },
    async operation(spec: OperationSpec, perform: (operationId: string) => Promise<JsonObject>) {
      const known = journal.get(`op:${spec.key}`) as JsonObject | undefined;
      if (known) return { operationId: spec.key, receipt: known, replayed: true };
      ran.push(spec.key);
      const receipt = await perform(spec.key);
      journal.set(`op:${spec.key}`, receipt);
      return { operationId: spec.key, receipt, replayed: false };
    },
  });
}

const deletions = (ran: readonly string[]) => ran.filter((name) => name.startsWith('delete:'));

async function write(file: string, content: string, mtime = OLD): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, content);
  await utimes(file, mtime, mtime);
}

async function listTree(dir: string, prefix = ''): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const names = await Promise.all(
    entries.map(async (entry) => (entry.isDirectory() ? listTree(path.join(dir, entry.name), `${prefix}${entry.name}/`) : [`${prefix}${entry.name}`])),
  );
  return names.flat().sort();
}

const structured = (result: ToolResult) =>
  result.structuredContent as Record<string, unknown> & {
    deleted: Array<{ path: string }>;
    skipped: Array<{ path: string; reason: string }>;
    candidates: Array<{ path: string }>;
  };

describe('cleanup_logs', () => {
  let logs: string;
  let outside: string;
  let cleanups: Array<() => Promise<void>>;
  let tool: ReturnType<typeof cleanupLogsTool>;
  const confirm: ElicitResult = { action: 'accept', content: { confirm: true } };

  beforeEach(async () => {
    const root = await makeTempDir('cleanup-logs');
    const elsewhere = await makeTempDir('cleanup-outside');
    cleanups = [root.cleanup, elsewhere.cleanup];
    logs = root.dir;
    outside = elsewhere.dir;
    await write(path.join(logs, 'app.log'), 'live log, never deleted\n');
    await write(path.join(logs, 'app.log.1'), 'rotated once\n');
    await write(path.join(logs, 'app.log.2.gz'), 'rotated twice, compressed\n');
    await write(path.join(logs, 'app.log.3'), 'rotated, but recent\n', new Date());
    await write(path.join(logs, 'nginx', 'access.log-20240101'), 'dated rotation\n');
    await write(path.join(logs, 'backup.tar.gz'), 'an archive, not a log\n');
    await write(path.join(logs, 'notes.txt'), 'only with include\n');
    await write(path.join(outside, 'secret.log.1'), 'outside the writable roots\n');
    await symlink(path.join(outside, 'secret.log.1'), path.join(logs, 'escape.log.1'));
    await symlink(path.join(logs, 'app.log'), path.join(logs, 'alias.log.1'));
    tool = cleanupLogsTool({ writableRoots: [logs] });
  });
  afterEach(async () => {
    for (const cleanup of cleanups) await cleanup();
  });

  it('is a journaled, eliciting, task-only tool, and needs absolute writable roots', () => {
    expect(tool).toMatchObject({ name: 'cleanup_logs', execution: 'task-required', journaled: true, elicits: true });
    expect(() => cleanupLogsTool({ writableRoots: [] })).toThrow(RangeError);
    expect(() => cleanupLogsTool({ writableRoots: ['logs'] })).toThrow(/must be absolute/);
  });

  it('on decline nothing changes; the question lists the rotated logs with size and date, never live logs, archives or links', async () => {
    const before = await listTree(logs);
    const context = cleanupContext([], new Map(), () => ({ action: 'decline' }));
    const result = await tool.run(tool.inputSchema.parse({ path: logs }), context);
    expect(await listTree(logs)).toEqual(before);
    expect(context.asked).toHaveLength(1);
    const message = context.asked[0]!.message;
    expect(message).toMatch(/^Delete 3 old log files \(\d+ B\) in .+, last modified before \d{4}-\d{2}-\d{2}T/);
    for (const name of ['app.log.1', 'app.log.2.gz', 'nginx/access.log-20240101']) expect(message).toContain(`  ${name}  `);
    for (const name of ['app.log  ', 'app.log.3', 'backup.tar.gz', 'notes.txt', 'escape.log.1', 'alias.log.1']) expect(message).not.toContain(name);
    expect(context.asked[0]).toMatchObject({ requestedSchema: { properties: { confirm: { type: 'boolean' } }, required: ['confirm'] } });
    expect(structured(result)).toMatchObject({ decision: 'declined', deleted: [], skipped: [], freedBytes: 0 });
    expect(result.content[0]).toMatchObject({ text: expect.stringMatching(/^Nothing deleted \(declined\)/) });

    const cancelled = await tool.run(
      tool.inputSchema.parse({ path: logs }),
      cleanupContext([], new Map(), () => ({ action: 'cancel' })),
    );
    expect(structured(cancelled).decision).toBe('cancelled');
    const unticked = await tool.run(
      tool.inputSchema.parse({ path: logs }),
      cleanupContext([], new Map(), () => ({ action: 'accept', content: { confirm: false } })),
    );
    expect(structured(unticked).decision).toBe('declined');
    expect(await listTree(logs)).toEqual(before);
  });

  it('on confirmation deletes exactly the listed files, in a journaled step, with progress', async () => {
    const journal = new Map<string, JsonValue>();
    const context = cleanupContext([], journal, () => confirm);
    const result = await tool.run(tool.inputSchema.parse({ path: logs }), context);
    expect(structured(result)).toMatchObject({ decision: 'confirmed', skipped: [] });
    expect(
      structured(result)
        .deleted.map((file) => path.relative(logs, file.path))
        .sort(),
    ).toEqual(['app.log.1', 'app.log.2.gz', 'nginx/access.log-20240101']);
    expect(await listTree(logs)).toEqual(['alias.log.1', 'app.log', 'app.log.3', 'backup.tar.gz', 'escape.log.1', 'notes.txt']);
    expect(await listTree(outside)).toEqual(['secret.log.1']);
    expect(context.ran[0]).toBe('analyse');
    expect(deletions(context.ran)).toHaveLength(3); // one ledger operation per deleted file
    expect(context.statuses).toContain('checked files (4/4)'); // the recent app.log.3 is checked, not listed
    expect(context.statuses).toContain('deleted files (3/3)');
  });

  it('deletes the list the user confirmed, not a new analysis: a re-run replays the journaled plan and the finished deletion', async () => {
    const journal = new Map<string, JsonValue>();
    // First run: the task parks at the question (the runtime ends the run there).
    const parked = new Error('parked for input');
    await expect(
      tool.run(
        tool.inputSchema.parse({ path: logs }),
        cleanupContext([], journal, () => Promise.reject(parked)),
      ),
    ).rejects.toBe(parked);
    expect([...journal.keys()]).toEqual(['analyse']);
    // Meanwhile another old rotated log appears; the user confirms what was shown.
    await write(path.join(logs, 'app.log.4'), 'arrived after the listing\n');
    const rerun = cleanupContext([], journal, () => confirm);
    const result = await tool.run(tool.inputSchema.parse({ path: logs }), rerun);
    expect(deletions(rerun.ran)).toHaveLength(3);
    expect(rerun.ran).not.toContain('analyse');
    expect(structured(result).deleted).toHaveLength(3);
    expect(await listTree(logs)).toContain('app.log.4');
    // After a crash past the deletion, nothing is deleted twice: the confirmed operations are replayed.
    await write(path.join(logs, 'app.log.1'), 'recreated under a listed name\n');
    const again = cleanupContext([], journal, () => confirm);
    await tool.run(tool.inputSchema.parse({ path: logs }), again);
    expect(again.ran).toEqual([]);
    expect(await listTree(logs)).toContain('app.log.1');
  });

  it('skips a file changed or removed after the listing and reports it; the others are deleted', async () => {
    const context = cleanupContext([], new Map(), async () => {
      await appendFile(path.join(logs, 'app.log.1'), 'written to after the listing\n');
      await rm(path.join(logs, 'app.log.2.gz'));
      return confirm;
    });
    const result = await tool.run(tool.inputSchema.parse({ path: logs }), context);
    expect(structured(result).skipped).toEqual([
      { path: path.join(logs, 'app.log.1'), reason: 'changed' },
      { path: path.join(logs, 'app.log.2.gz'), reason: 'missing' },
    ]);
    expect(structured(result).deleted.map((file) => file.path)).toEqual([path.join(logs, 'nginx', 'access.log-20240101')]);
    expect(await listTree(logs)).toContain('app.log.1');
    expect(result.content[0]).toMatchObject({ text: expect.stringContaining(`skipped ${path.join(logs, 'app.log.1')}: changed`) });
  });

  it('refuses a path outside the writable roots (also through a symlink) before and during the run', async () => {
    const context = cleanupContext([], new Map(), () => confirm);
    await expect(tool.preflight?.(tool.inputSchema.parse({ path: outside }), { roots: [outside], deniedPaths: [] })).rejects.toBeInstanceOf(ToolInputError);
    await expect(tool.run(tool.inputSchema.parse({ path: outside }), context)).rejects.toThrow(/outside the allowed roots/);
    await expect(tool.run(tool.inputSchema.parse({ path: path.join(logs, 'escape.log.1') }), context)).rejects.toThrow(/outside the allowed roots/);
    await expect(tool.run(tool.inputSchema.parse({ path: 'relative/logs' }), context)).rejects.toThrow(/must be absolute/);
    await expect(tool.preflight?.(tool.inputSchema.parse({ path: logs, include: '[oops' }), { roots: [], deniedPaths: [] })).rejects.toThrow(
      /include is not a valid glob/,
    );
    expect(context.asked).toEqual([]);
    expect(await listTree(outside)).toEqual(['secret.log.1']);
  });

  it('include adds matching files; olderThanDays 0 takes any age; nothing qualifying asks nothing', async () => {
    const context = cleanupContext([], new Map(), () => confirm);
    const result = await tool.run(tool.inputSchema.parse({ path: logs, include: '*.txt', olderThanDays: 0 }), context);
    expect(
      structured(result)
        .deleted.map((file) => path.basename(file.path))
        .sort(),
    ).toEqual(['access.log-20240101', 'app.log.1', 'app.log.2.gz', 'app.log.3', 'notes.txt']);
    const empty = cleanupContext([], new Map(), () => confirm);
    const nothing = await tool.run(tool.inputSchema.parse({ path: logs }), empty);
    expect(empty.asked).toEqual([]);
    expect(structured(nothing).decision).toBe('nothing-to-delete');
  });

  it('honours the signal', async () => {
    const context = cleanupContext([], new Map(), () => confirm);
    context.controller.abort(new Error('cancelled'));
    await expect(tool.run(tool.inputSchema.parse({ path: logs }), context)).rejects.toThrow('cancelled');
    expect(await listTree(logs)).toContain('app.log.1');
  });
});
