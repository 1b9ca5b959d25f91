/**
 * `call --output FILE` / `watch --output FILE` (stop 43's newcomer: a 50 MB result printed 64 KB and
 * "[resource_link content omitted; use --json]", and the CLI could not fetch the rest): a result too large to send
 * inline is read back in full (`resources/read`, in chunks where the server asks for that) and written to the file.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { defineTool, textResult } from '../../src/core/tool.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { cliRunner, ensureBuilt } from './support.js';

/** 1.5 MB of numbered lines: above the 1 MiB a buffered resources/read answers whole, so that path reads chunks. */
const BIG = Array.from({ length: 60_000 }, (_, i) => `line ${String(i).padStart(6, '0')} of the big result`).join('\n');

describe('mcp-tasks call/watch --output: the whole of a large result', () => {
  const temp = makeTempDir('mcp-tasks-output-');
  const env: NodeJS.ProcessEnv = { ...process.env, MCP_TASKS_CLIENT_STATE: join(temp.dir, 'journal.json') };
  delete env.MCP_TASKS_URL;
  delete env.MCP_TASKS_TOKEN;
  const { cli } = cliRunner(env);
  let running: RunningTasksServer;
  let bigRuns = 0;
  const bigTool = defineTool({
    name: 'big',
    description: 'returns 1.5 MB of text',
    execution: 'task-optional',
    inputSchema: z.object({}),
    async run() {
      bigRuns += 1;
      return textResult(BIG);
    },
  });

  beforeAll(async () => {
    ensureBuilt();
    const small = defineTool({
      name: 'small',
      description: 'returns hello',
      execution: 'task-optional',
      inputSchema: z.object({}),
      async run() {
        return textResult('hello');
      },
    });
    running = await startTasksServer({ tools: [bigTool, small], limits: { maxResultBytes: 100_000, pollIntervalMs: 100 } });
  });
  afterAll(async () => {
    await running.close();
    temp.remove();
  });

  it.each(['2025-11-25', '2026-07-28'])(
    'over %s: without --output the first part and how to get the rest; with it, all of it in the file',
    async (protocol) => {
      const plain = await cli(['call', 'big', '--url', running.url, '--protocol', protocol]);
      expect(plain.code, plain.stderr).toBe(0);
      expect(plain.stdout.length).toBeLessThan(BIG.length);
      expect(plain.stdout).toContain('[Result truncated');
      const taskId = /task (\S+) created/.exec(plain.stderr)?.[1] as string;
      expect(plain.stderr).toContain(`the result was too large to send inline; this is its first part. Save all of it with:`);
      expect(plain.stderr).toContain(`watch ${taskId}`);

      const file = join(temp.dir, `${protocol}.txt`);
      const saved = await cli(['call', 'big', '--url', running.url, '--protocol', protocol, '--output', file]);
      expect(saved.code, saved.stderr).toBe(0);
      expect(saved.stdout).toBe('');
      expect(readFileSync(file, 'utf8')).toBe(`${BIG}\n`);
      expect(saved.stderr).toMatch(/result written to \S+ \(\d+ bytes, read back in full from the server\)/);

      // watch of the finished task, and --json: the whole CallToolResult.
      const json = join(temp.dir, `${protocol}.json`);
      const watched = await cli(['watch', taskId, '--url', running.url, '--protocol', protocol, '--json', '--output', json]);
      expect(watched.code, watched.stderr).toBe(0);
      expect(JSON.parse(readFileSync(json, 'utf8'))).toMatchObject({ taskId, status: 'completed', result: { content: [{ type: 'text', text: BIG }] } });
    },
    60_000,
  );

  it('an --output path that cannot be written is refused before anything is sent (exit 64), so no result is lost to it', async () => {
    const before = bigRuns;
    // /dev/shm: a directory where paths are written in place (never renamed onto) — only looked at here.
    for (const path of [join(temp.dir, 'no', 'such', 'dir', 'x.txt'), temp.dir, '/dev/shm']) {
      const refused = await cli(['call', 'big', '--url', running.url, '--output', path]);
      expect(refused.code, refused.stderr).toBe(64);
      expect(refused.stderr).toContain(`--output ${path}: cannot write there`);
    }
    expect(bigRuns).toBe(before);
  });

  it('a $TMPDIR that cannot take the scratch file of an in-place target is named as the problem, not FILE (exit 64 before the call)', async () => {
    const before = bigRuns;
    const fifo = join(temp.dir, 'named.fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const missing = join(temp.dir, 'no-such-tmp');
    const refused = await cliRunner({ ...env, TMPDIR: missing }).cli(['call', 'big', '--url', running.url, '--output', fifo]);
    expect(refused.code, refused.stderr).toBe(64);
    expect(refused.stderr).toContain(`--output ${fifo}: the temporary directory ${missing} ($TMPDIR) cannot take the scratch file`);
    expect(bigRuns).toBe(before);
  });

  it('a large result answered inline (a quick task within the inline grace, 2026-07-28): the hint names its task, with the server to ask', async () => {
    const graceful = await startTasksServer({ tools: [bigTool], limits: { maxResultBytes: 100_000, inlineGraceMs: 5_000 } });
    try {
      const before = bigRuns;
      const run = await cli(['call', 'big', '--url', graceful.url, '--protocol', '2026-07-28']);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).not.toContain('created');
      const hint = /Save all of it with: (.*) --output <file>\n/.exec(run.stderr)?.[1] ?? '';
      expect(hint).toMatch(new RegExp(`watch \\S+ --url ${graceful.url.replaceAll('.', '\\.')}`));
      // Following the hint reads the kept result; the tool does not run again.
      const file = join(temp.dir, 'inline.txt');
      const args = hint.split(' ').slice(hint.split(' ').indexOf('watch'));
      const saved = await cli([...args, '--output', file]);
      expect(saved.code, saved.stderr).toBe(0);
      expect(readFileSync(file, 'utf8')).toBe(`${BIG}\n`);
      expect(bigRuns).toBe(before + 1);
    } finally {
      await graceful.close();
    }
  });

  it('control: a result small enough to send inline is written as it came, with no read back', async () => {
    const file = join(temp.dir, 'small.txt');
    const small = await cli(['call', 'small', '--url', running.url, '--output', file]);
    expect(small.code, small.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe('hello\n');
    expect(small.stderr).toContain(`result written to ${file} (6 bytes)\n`);
    expect(small.stderr).not.toContain('too large');
  });
});
