/**
 * `mcp-tasks serve --task-fallback-tools` as a user runs it (the built CLI, real HTTP, the built-in tools, the SDK
 * 1.32.2 client declaring no `capabilities.tasks`, 2025-11-25 R1): the task-required `cleanup_logs` answers with a
 * task id and its immediate response, and the fallback tools follow and cancel it. Without the flag the same host
 * sees `cleanup_logs` as `taskSupport: "required"` and no fallback tools (negative control).
 */
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connectV1Http } from '../helpers/official-clients.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { ensureBuilt } from './support.js';

const text = (result: unknown): string => String(((result as { content?: Array<{ text?: string }> }).content ?? [])[0]?.text);

describe('mcp-tasks serve --task-fallback-tools (issue 13 item 7)', () => {
  const temp = makeTempDir('mcp-tasks-fallback-cli-');
  const logs = join(temp.dir, 'logs');
  const servers: ServerProcess[] = [];

  beforeAll(() => {
    ensureBuilt();
    mkdirSync(logs);
    const old = join(logs, 'app.log.1');
    writeFileSync(old, 'rotated\n');
    utimesSync(old, new Date('2020-01-01'), new Date('2020-01-01'));
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    temp.remove();
  });

  const start = async (name: string, flags: string[]): Promise<ServerProcess> => {
    const dataDir = join(temp.dir, name);
    mkdirSync(dataDir);
    const server = await startServerProcess(dataDir, ['--root', logs, '--writable-root', logs, ...flags]);
    servers.push(server);
    return server;
  };

  it('R10 negative control: without the flag no fallback tools, and cleanup_logs stays taskSupport "required"', async () => {
    const server = await start('plain', []);
    const host = await connectV1Http(server.url);
    try {
      const tools = Object.fromEntries((await host.client.listTools()).tools.map((tool) => [tool.name, tool]));
      expect(tools.cleanup_logs?.execution).toEqual({ taskSupport: 'required' });
      expect(Object.keys(tools)).not.toContain('get_task_status');
    } finally {
      await host.close();
    }
  });

  it('R15 with the flag cleanup_logs answers with a task id and what it started; get_task_status follows it, cancel_task ends it', async () => {
    const server = await start('fallback', ['--task-fallback-tools']);
    const host = await connectV1Http(server.url, { capabilities: { elicitation: { form: {} } } });
    try {
      const tools = Object.fromEntries((await host.client.listTools()).tools.map((tool) => [tool.name, tool]));
      expect(tools.cleanup_logs?.execution).toEqual({ taskSupport: 'optional' });
      expect(Object.keys(tools)).toEqual(expect.arrayContaining(['get_task_status', 'get_task_result', 'cancel_task']));

      const started = await host.client.callTool({ name: 'cleanup_logs', arguments: { path: logs, olderThanDays: 30 } });
      expect(text(started)).toContain(`Started looking for rotated logs older than 30 days below ${logs}`);
      const taskId = (started.structuredContent as { taskId: string }).taskId;
      expect(text(started)).toContain(`cancel_task {"taskId":"${taskId}"}`);

      // The tool lists what it would delete and asks: a host that cannot answer sees input_required, then cancels.
      let status = '';
      for (let attempt = 0; attempt < 100 && status !== 'input_required'; attempt += 1) {
        status = String(
          ((await host.client.callTool({ name: 'get_task_status', arguments: { taskId } })).structuredContent as { status?: string } | undefined)?.status,
        );
        if (status !== 'input_required') await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(status).toBe('input_required');
      expect(text(await host.client.callTool({ name: 'cancel_task', arguments: { taskId } }))).toBe(`Task ${taskId} is cancelled.`);
      expect(text(await host.client.callTool({ name: 'get_task_result', arguments: { taskId } }))).toContain('was cancelled');
    } finally {
      await host.close();
    }
  });
});
