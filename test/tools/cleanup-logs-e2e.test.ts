import { mkdir, readdir, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connectTasksClient, type InputRequest } from '../../src/client/index.js';
import { cleanupLogsTool } from '../../src/tools/index.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from './helpers.js';

/** `cleanup_logs` through the real server, runtime and SQLite store, answered by `mcp-tasks/client`. */
describe('cleanup_logs end to end', () => {
  let running: RunningTasksServer;
  let root: { dir: string; cleanup(): Promise<void> };
  const old = new Date(Date.now() - 10 * 86_400_000);

  beforeAll(async () => {
    root = await makeTempDir('cleanup-e2e');
    running = await startTasksServer({ tools: [cleanupLogsTool({ writableRoots: [root.dir] })], limits: { pollIntervalMs: 50 } });
  });
  afterAll(async () => {
    await running.close();
    await root.cleanup();
  });

  it.each([
    ['2026-07-28', 'accept'],
    ['2025-11-25', 'decline'],
  ] as const)('over %s: the task asks with the list, and the answer (%s) decides what is deleted', async (protocol, action) => {
    const dir = path.join(root.dir, protocol);
    await mkdir(dir);
    for (const name of ['svc.log', 'svc.log.1', 'svc.log.2.gz']) {
      await writeFile(path.join(dir, name), `${name}\n`);
      await utimes(path.join(dir, name), old, old);
    }
    const asked: InputRequest[] = [];
    const client = await connectTasksClient({
      url: running.url,
      protocol,
      journal: false,
      onInput: (request) => {
        asked.push(request);
        return action === 'accept' ? { action, content: { confirm: true } } : { action };
      },
    });
    try {
      const created = await client.callTool('cleanup_logs', { path: dir });
      if (created.kind !== 'task') throw new Error('cleanup_logs must run as a task');
      const result = await client.resume(created.taskId);
      expect(asked).toHaveLength(1);
      expect(asked[0]?.taskId).toBe(created.taskId);
      expect(asked[0]?.params.message).toMatch(/^Delete 2 old log files .*\n {2}svc\.log\.1 {2}.*\n {2}svc\.log\.2\.gz {2}/);
      const remaining = (await readdir(dir)).sort();
      if (action === 'accept') {
        expect(result.structuredContent).toMatchObject({
          decision: 'confirmed',
          skipped: [],
          deleted: [{ path: path.join(dir, 'svc.log.1') }, { path: path.join(dir, 'svc.log.2.gz') }],
        });
        expect(remaining).toEqual(['svc.log']);
      } else {
        expect(result.structuredContent).toMatchObject({ decision: 'declined', deleted: [] });
        expect(remaining).toEqual(['svc.log', 'svc.log.1', 'svc.log.2.gz']);
      }
    } finally {
      await client.close();
    }
  });

  it('a path outside the writable roots is refused before any task exists', async () => {
    const outside = await makeTempDir('cleanup-e2e-outside');
    const client = await connectTasksClient({
      url: running.url,
      protocol: '2026-07-28',
      journal: false,
      onInput: () => ({ action: 'accept', content: { confirm: true } }),
    });
    try {
      const outcome = await client.callTool('cleanup_logs', { path: outside.dir });
      expect(outcome).toMatchObject({ kind: 'result', result: { isError: true, content: [{ text: expect.stringContaining('outside the allowed roots') }] } });
    } finally {
      await client.close();
      await outside.cleanup();
    }
  });
});
