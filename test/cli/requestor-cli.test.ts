import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { TokenFileAuthenticator } from '../../src/auth/token-file.js';
import { connectTasksClient, TaskJournal } from '../../src/client/index.js';
import { defineTool } from '../../src/core/tool.js';
import { countingTools } from '../client/support.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { cliRunner, ensureBuilt, MAIN } from './support.js';

const UNKNOWN_ID = 'Zz9Yy8Xx7Ww6Vv5Uu4Tt3S';
const ROOT = resolve(import.meta.dirname, '../..');

describe('mcp-tasks call / get / watch / cancel (spawned CLI against a real server)', () => {
  const counting = countingTools();
  const temp = makeTempDir('mcp-tasks-cli-');
  const journalPath = join(temp.dir, 'state', 'tasks.json');
  const env: NodeJS.ProcessEnv = { ...process.env, MCP_TASKS_CLIENT_STATE: journalPath };
  delete env.MCP_TASKS_URL;
  delete env.MCP_TASKS_TOKEN;
  let running: RunningTasksServer;

  const { start, cli } = cliRunner(env);
  const createdId = (stderr: string): string => stderr.match(/task (\S+) created/)?.[1] ?? '';

  beforeAll(async () => {
    ensureBuilt();
    running = await startTasksServer({ tools: counting.tools, limits: { pollIntervalMs: 100 } });
  });
  afterAll(async () => {
    await running.close();
    temp.remove();
  });

  it('completed (auto → 2026-07-28): id and progress on stderr, text result on stdout, exit 0, journal entry gone', async () => {
    const before = counting.runs.get('slow_compute') ?? 0;
    const run = await cli(['call', 'slow_compute', '--args', '{"seconds":1.2,"label":"cli"}', '--url', running.url]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('Computed cli after 1.2s\n');
    const id = createdId(run.stderr);
    expect(run.stderr).toContain(`mcp-tasks: task ${id} created (tasks v2, MCP 2026-07-28, ${running.url})`);
    expect(run.stderr).toContain(`mcp-tasks: task ${id} working: computing for 1.2s`);
    expect(await new TaskJournal(journalPath).get(id)).toBeUndefined();
    expect(counting.runs.get('slow_compute')).toBe(before + 1);
  });

  it('completed over 2025-11-25 with --json: a {taskId, status, result} document on stdout', async () => {
    const run = await cli(['call', 'slow_compute', '--args', '{"seconds":0.3}', '--url', running.url, '--protocol', '2025-11-25', '--json']);
    expect(run.code).toBe(0);
    const id = createdId(run.stderr);
    expect(run.stderr).toContain('(tasks v1, MCP 2025-11-25');
    expect(JSON.parse(run.stdout)).toMatchObject({
      taskId: id,
      status: 'completed',
      result: { content: [{ type: 'text', text: 'Computed result after 0.3s' }] },
    });
  });

  it.each(['2025-11-25', '2026-07-28'])('tool error over %s: result on stdout, exit 1', async (protocol) => {
    const run = await cli(['call', 'failing_job', '--url', running.url, '--protocol', protocol]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('The job failed: simulated tool error\n');
    expect(run.stderr).toMatch(/the tool reported an error \(task \S+\)/);
  });

  it('failed (JSON-RPC error outcome): message and code on stderr, exit 2', async () => {
    const run = await cli(['call', 'protocol_error_job', '--url', running.url]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/task \S+ failed: Simulated protocol error: upstream unavailable \(JSON-RPC -32603\)/);
  });

  it('cancelled: `mcp-tasks cancel` from another process ends a waiting call with exit 3', async () => {
    const call = start(['call', 'slow_compute', '--args', '{"seconds":60}', '--url', running.url]);
    const [, id] = await call.stderrLine(/task (\S+) created/);
    const cancel = await cli(['cancel', id as string]);
    expect(cancel.code).toBe(0);
    // The final outcome is reported once it arrives (a task may still end completed).
    expect(cancel.stdout).toBe(`task ${id}: cancelled\n`);
    expect(cancel.stderr).toContain(`task ${id}: cancellation requested; waiting for the final outcome`);
    const run = await call.done;
    expect(run.code).toBe(3);
    expect(run.stderr).toContain(`Task ${id} was cancelled`);
  });

  it('unknown task: get, watch and cancel exit 4', async () => {
    for (const command of ['get', 'watch', 'cancel']) {
      const run = await cli([command, UNKNOWN_ID, '--url', running.url]);
      expect(run.code, command).toBe(4);
      expect(run.stderr, command).toContain(`Task ${UNKNOWN_ID} not found`);
    }
  });

  it('usage errors exit 64', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['call', 'greet', '--args', 'nope', '--url', running.url], /--args is not valid JSON/],
      [['call', 'greet', '--args', '[1]', '--url', running.url], /--args must be a JSON object/],
      [['call', 'greet', '--protocol', '2024-11-05'], /--protocol/],
      [['watch', UNKNOWN_ID, '--timeout', '0'], /expected a positive number of seconds/],
      [['call'], /missing required argument 'tool'/],
      [['get', UNKNOWN_ID, '--url', 'not a url'], /--url not a url: not a URL/],
    ];
    for (const [args, message] of cases) {
      const run = await cli(args);
      expect(run.code, args.join(' ')).toBe(64);
      expect(run.stderr, args.join(' ')).toMatch(message);
    }
  });

  it('bad input is 64 whatever finds it: an unknown tool, arguments the tool refuses (it never ran), the command line', async () => {
    const unknown = await cli(['call', 'no_such_tool', '--url', running.url, '--json']);
    expect(unknown.code, unknown.stderr).toBe(64);
    expect(JSON.parse(unknown.stdout)).toMatchObject({
      status: 'bad_input',
      exitCode: 64,
      error: { code: -32602, message: expect.stringContaining('Unknown tool') },
    });
    const before = counting.runs.get('slow_compute') ?? 0;
    const refused = await cli(['call', 'slow_compute', '--args', '{"seconds":"soon"}', '--url', running.url]);
    expect(refused.code, refused.stderr).toBe(64);
    expect(refused.stderr).toContain('the arguments were refused; the tool did not run');
    expect(counting.runs.get('slow_compute') ?? 0).toBe(before);
    const flag = await cli(['call', 'greet', '--no-such-flag', '--json']);
    expect(flag.code).toBe(64);
    expect(JSON.parse(flag.stdout)).toMatchObject({ status: 'bad_input', exitCode: 64, error: { message: expect.stringContaining('--no-such-flag') } });
  });

  it('--json prints one JSON object for every error too; --version prints the version', async () => {
    const missing = await cli(['get', UNKNOWN_ID, '--url', running.url, '--json']);
    expect(missing.code).toBe(4);
    expect(JSON.parse(missing.stdout)).toMatchObject({ taskId: UNKNOWN_ID, status: 'not_found', exitCode: 4 });
    const server = createServer();
    await new Promise<void>((resolveListen) => server.listen(0, '127.0.0.1', resolveListen));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolveClose) => server.close(() => resolveClose()));
    const unreachable = await cli(['call', 'greet', '--args', '{"name":"x"}', '--url', `http://127.0.0.1:${port}/mcp`, '--json']);
    expect(unreachable.code).toBe(5);
    expect(JSON.parse(unreachable.stdout)).toMatchObject({ status: 'error', exitCode: 5, error: { message: expect.stringContaining('ECONNREFUSED') } });
    const version = await cli(['--version']);
    expect([version.code, version.stdout]).toEqual([0, `${JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version}\n`]);
  });

  it.each(['2025-11-25', '2026-07-28'])('over %s, cancel tells "cancelled" (0) from "ended before the cancel took effect" (9)', async (protocol) => {
    const done = await cli(['call', 'slow_compute', '--args', '{"seconds":0}', '--detach', '--url', running.url, '--protocol', protocol]);
    const id = done.stdout.trim();
    await cli(['watch', id, '--url', running.url, '--protocol', protocol]); // it has completed
    const late = await cli(['cancel', id, '--url', running.url, '--protocol', protocol, '--json']);
    expect(late.code, late.stderr).toBe(9);
    expect(JSON.parse(late.stdout)).toMatchObject({ taskId: id, final: 'completed', exitCode: 9 });
    const again = await cli(['cancel', id, '--url', running.url, '--protocol', protocol]);
    expect([again.code, again.stdout, again.stderr]).toEqual([9, `task ${id}: already completed, nothing to cancel\n`, '']);
    const slow = await cli(['call', 'slow_compute', '--args', '{"seconds":60}', '--detach', '--url', running.url, '--protocol', protocol]);
    const cancelled = await cli(['cancel', slow.stdout.trim(), '--url', running.url, '--protocol', protocol]);
    expect([cancelled.code, cancelled.stdout]).toEqual([0, `task ${slow.stdout.trim()}: cancelled\n`]);
  });

  it.each(['2025-11-25', '2026-07-28'])(
    'a sync tool that throws, over %s: the server answered the call, so it failed (exit 2, as a failed task), not "connection or protocol" (5)',
    async (protocol) => {
      let runs = 0;
      const throwing = defineTool({
        name: 'sync_throws',
        description: 'throws, inline',
        execution: 'sync',
        inputSchema: z.object({}),
        async run() {
          runs += 1;
          throw new Error('sync boom');
        },
      });
      const server = await startTasksServer({ tools: [throwing] });
      try {
        const run = await cli(['call', 'sync_throws', '--url', server.url, '--protocol', protocol]);
        expect([run.code, run.stdout]).toEqual([2, '']);
        expect(run.stderr).toBe('mcp-tasks: tools/call sync_throws: Internal error in tool sync_throws (JSON-RPC -32603)\n');
        const json = await cli(['call', 'sync_throws', '--url', server.url, '--protocol', protocol, '--json']);
        expect(JSON.parse(json.stdout)).toMatchObject({ status: 'failed', tool: 'sync_throws', exitCode: 2, error: { code: -32603 } });
        // Each call ran the tool once: a known outcome, never resent.
        expect(runs).toBe(2);
      } finally {
        await server.close();
      }
    },
  );

  it('connection error exits 5 without a task; get of a task whose server is down says the task keeps its id', async () => {
    const server = createServer();
    await new Promise<void>((resolveListen) => server.listen(0, '127.0.0.1', resolveListen));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolveClose) => server.close(() => resolveClose()));
    const run = await cli(['call', 'greet', '--args', '{"name":"x"}', '--url', `http://127.0.0.1:${port}/mcp`]);
    expect(run.code).toBe(5);
    expect(run.stderr).toMatch(/cannot reach http:\/\/127\.0\.0\.1:\d+\/mcp: ECONNREFUSED/);
    // A task's server that is down (the README tour's `get` after `kill -9`): the task keeps its id, and how to ask again.
    const get = await cli(['get', 'T7mJRVzXfD-OKkoLFKiP8g', '--url', `http://127.0.0.1:${port}/mcp`]);
    expect(get.code).toBe(5);
    expect(get.stderr).toContain(
      `task T7mJRVzXfD-OKkoLFKiP8g keeps its id; try again once the server answers: node ${MAIN} get T7mJRVzXfD-OKkoLFKiP8g --url http://127.0.0.1:${port}/mcp\n`,
    );
    // cancel says to cancel again (a cancel that never arrived is not done by a get).
    const cancel = await cli(['cancel', 'T7mJRVzXfD-OKkoLFKiP8g', '--url', `http://127.0.0.1:${port}/mcp`, '--protocol', '2025-11-25']);
    expect(cancel.code).toBe(5);
    expect(cancel.stderr).toContain(
      `try again once the server answers: node ${MAIN} cancel T7mJRVzXfD-OKkoLFKiP8g --url http://127.0.0.1:${port}/mcp --protocol 2025-11-25\n`,
    );
  });

  it('sends the bearer token from MCP_TASKS_TOKEN; without it a secured server answers 401 and the CLI exits 5', async () => {
    const token = 'cli-token-0123456789abcdef';
    const authenticator = new TokenFileAuthenticator({ tokens: [{ token, issuer: 'test', subject: 'cli', tenant: 't' }] });
    const secured = await startTasksServer({ tools: counting.tools, auth: authenticator });
    try {
      const denied = await cli(['call', 'greet', '--args', '{"name":"x"}', '--url', secured.url]);
      expect(denied.code).toBe(5);
      expect(denied.stderr).toMatch(/HTTP 401 from .* the server wants a valid bearer token \(--token \/ MCP_TASKS_TOKEN\)/);
      env.MCP_TASKS_TOKEN = token;
      const allowed = await cli(['call', 'slow_compute', '--args', '{"seconds":0}', '--url', secured.url]);
      expect([allowed.code, allowed.stdout]).toEqual([0, 'Computed result after 0s\n']);
    } finally {
      delete env.MCP_TASKS_TOKEN;
      await secured.close();
    }
  });

  it('--detach prints the id and exits 0; get and watch find the task through the journal', async () => {
    const detached = await cli(['call', 'slow_compute', '--args', '{"seconds":0.5}', '--url', running.url, '--detach']);
    expect(detached.code).toBe(0);
    const id = detached.stdout.trim();
    expect(id).toBe(createdId(detached.stderr));
    expect(detached.stderr).toContain(`follow it with: node ${MAIN} watch ${id}`);
    expect(await new TaskJournal(journalPath).get(id)).toMatchObject({ url: running.url, generation: 'v2', tool: 'slow_compute' });

    const get = await cli(['get', id]);
    expect(get.code).toBe(0);
    expect(get.stdout).toMatch(new RegExp(`^task {5}${id}\\nstatus {3}(working|completed)\\n`));
    const watch = await cli(['watch', id]);
    expect(watch.code).toBe(0);
    expect(watch.stdout).toBe('Computed result after 0.5s\n');
    expect(await new TaskJournal(journalPath).get(id)).toBeUndefined();
  });

  it('watch finds a 2025-11-25 task that is not journaled by falling back from 2026-07-28', async () => {
    const client = await connectTasksClient({ url: running.url, protocol: '2025-11-25', journal: false });
    const created = await client.callTool('slow_compute', { seconds: 0.3, label: 'v1' });
    await client.close();
    if (created.kind !== 'task') throw new Error('expected a task');
    const watch = await cli(['watch', created.taskId, '--url', running.url, '--json']);
    expect(watch.code).toBe(0);
    expect(JSON.parse(watch.stdout)).toMatchObject({ taskId: created.taskId, status: 'completed', result: { content: [{ text: 'Computed v1 after 0.3s' }] } });
  });

  it('--timeout (3 s, so a loaded machine still gets the task id first) stops waiting with exit 124 and the task keeps running', async () => {
    const run = await cli(['call', 'slow_compute', '--args', '{"seconds":60}', '--url', running.url, '--timeout', '3']);
    expect(run.code).toBe(124);
    const id = createdId(run.stderr);
    expect(run.stderr).toContain(`resume with: node ${MAIN} watch ${id}`);
    await expectStillWorkingThenCancel(id);
  });

  it('Ctrl-C detaches with exit 130 and does not cancel the task', async () => {
    const call = start(['call', 'slow_compute', '--args', '{"seconds":60}', '--url', running.url]);
    const [, id] = await call.stderrLine(/task (\S+) working/);
    call.child.kill('SIGINT');
    const run = await call.done;
    expect(run.code).toBe(130);
    expect(run.stderr).toContain(`detached; task ${id} keeps running on the server\n  resume with: node ${MAIN} watch ${id}`);
    await expectStillWorkingThenCancel(id as string);
  });

  it('a relative argument the tool declares a local path is sent absolute; others (even one named root) are untouched', async () => {
    const run = await cli(['call', 'echo_args', '--args', '{"path":"logs/app.log","root":".","label":"logs/x"}', '--url', running.url], temp.dir);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ path: join(temp.dir, 'logs/app.log'), root: '.', label: 'logs/x' });
  });

  it('a tool that never becomes a task prints its result directly (no task id)', async () => {
    const run = await cli(['call', 'greet', '--args', '{"name":"cli"}', '--url', running.url, '--protocol', '2025-11-25']);
    expect([run.code, run.stdout, run.stderr]).toEqual([0, 'Hello, cli!\n', '']);
  });

  async function expectStillWorkingThenCancel(taskId: string): Promise<void> {
    const client = await connectTasksClient({ url: running.url, journal: journalPath });
    expect((await client.getTask(taskId)).status).toBe('working');
    await client.cancelTask(taskId);
    await client.close();
  }
});
