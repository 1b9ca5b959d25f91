/**
 * `mcp-tasks resume` and `mcp-tasks tasks` over a real server (issue 26 items 1 and 2): journaled tasks are followed
 * concurrently, each result printed as it arrives; `--timeout` never makes the CLI state a status the server did
 * not give; the journal's statuses are shown as what they are — an observation at a time.
 */
import { join } from 'node:path';

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { effectTools } from '../helpers/fault-proxy.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { cliRunner, ensureBuilt } from './support.js';

describe('mcp-tasks resume / tasks (spawned CLI, real server)', () => {
  const fixture = effectTools();
  const temp = makeTempDir('mcp-tasks-cli-resume-');
  let journal = 0;
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.MCP_TASKS_URL;
  delete env.MCP_TASKS_TOKEN;
  const { cli } = cliRunner(env);
  let running: RunningTasksServer;

  beforeAll(async () => {
    ensureBuilt();
    running = await startTasksServer({ tools: fixture.tools, limits: { pollIntervalMs: 100 } });
  });
  beforeEach(() => {
    env.MCP_TASKS_CLIENT_STATE = join(temp.dir, `tasks-${++journal}.json`); // each test its own journal
  });
  afterAll(async () => {
    await running.close();
    temp.remove();
  });

  const detached = async (tool: string, args: Record<string, unknown>): Promise<string> => {
    const run = await cli(['call', tool, '--args', JSON.stringify(args), '--detach', '--url', running.url]);
    expect(run.code, run.stderr).toBe(0);
    return run.stdout.trim();
  };

  it('follows journaled tasks concurrently: one waiting for input does not hold back a later one, whose result is printed; the waiting one is reported by the status the server gave', async () => {
    const waiting = await detached('confirm_effect', { label: 'r-wait' }); // older: the old resume followed it first
    const quick = await detached('effect_job', { label: 'r-quick', seconds: 0.3 });
    const resumed = await cli(['resume', '--url', running.url, '--timeout', '3']);
    expect(resumed.stdout).toBe('effect r-quick #1\n');
    expect(resumed.stderr).toContain(`task ${quick} (effect_job) completed; its result follows`);
    expect(resumed.code).toBe(124);
    expect(resumed.stderr).toContain(`Gave up waiting for task ${waiting}`);
    expect(resumed.stderr).toMatch(new RegExp(`task ${waiting} .*its last status from the server was input_required`));
    expect(resumed.stderr).not.toMatch(/still \w+ on the server|still running/);
  });

  it('a task never reached before the deadline is "not reached before the deadline", never "still running"', async () => {
    const id = await detached('effect_job', { label: 'r-unreached', seconds: 0.2 });
    const resumed = await cli(['resume', '--url', running.url, '--timeout', '0.001']);
    expect(resumed.code).toBe(124);
    expect(resumed.stderr).toContain(`Gave up waiting for task ${id}`);
    expect(resumed.stderr).toContain('not reached before the deadline');
    expect(resumed.stderr).not.toMatch(/still \w+ on the server|still running/);
  });

  it('`tasks` never shows a detached task as working: its status is "last seen <status> at <time>", and it asks no server', async () => {
    const id = await detached('effect_job', { label: 'r-listed', seconds: 0.1 });
    await new Promise((resolve) => setTimeout(resolve, 500)); // the task has completed on the server by now
    const listed = await cli(['tasks']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`${id} +effect_job +last seen working at \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z `));
    expect(listed.stdout).not.toMatch(new RegExp(`${id} +effect_job +working`));
    expect(listed.stdout).toContain("not the tasks' state now");
  });

  it('`get` of a journaled task records what it saw: `tasks` then shows the time of that get, not of the call', async () => {
    const id = await detached('confirm_effect', { label: 'r-seen' }); // waits for input: still unfinished at the get
    const seenAt = (stdout: string): number => Date.parse(new RegExp(`${id} +confirm_effect +last seen \\w+ at (\\S+)`).exec(stdout)?.[1] ?? 'none');
    const before = seenAt((await cli(['tasks'])).stdout);
    expect(before).not.toBeNaN();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const getStarted = Date.now();
    const got = await cli(['get', id, '--url', running.url]);
    expect(got.code, got.stderr).toBe(0);
    const listed = (await cli(['tasks'])).stdout;
    expect(listed).toMatch(new RegExp(`${id} +confirm_effect +last seen input_required at `));
    expect(seenAt(listed)).toBeGreaterThanOrEqual(getStarted - 5);
    expect(seenAt(listed)).toBeGreaterThan(before);
  });

  it('`get` of a finished task records its end: `tasks` says "last seen completed", and `watch <id>` still finds it through the journal', async () => {
    const id = await detached('effect_job', { label: 'r-got', seconds: 0.1 });
    await new Promise((resolve) => setTimeout(resolve, 600));
    const got = await cli(['get', id, '--url', running.url]);
    expect(got.code, got.stderr).toBe(0);
    expect(got.stdout).toContain('effect r-got #1');
    expect((await cli(['tasks'])).stdout).toMatch(new RegExp(`${id} +effect_job +last seen completed at `));
    const watched = await cli(['watch', id]);
    expect(watched.code, watched.stderr).toBe(0);
    expect(watched.stdout).toBe('effect r-got #1\n');
    expect((await cli(['tasks'])).stdout).not.toContain(id);
  });
});
