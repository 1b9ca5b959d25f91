/**
 * The CLI under faults (issue 13 items 3, 4, 5, 10), end to end over real HTTP: it says when the server is
 * unreachable and when recovery restarted the task, reports a lost call as "outcome unknown" (exit 8), keeps the
 * journal (`tasks`), and after a kill -9 of `call` finishes the task with `resume` without a second tools/call.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';

import { TaskJournal } from '../../src/client/index.js';
import { effectTools, FaultProxy, startIdempotentFront } from '../helpers/fault-proxy.js';
import { startServerProcess } from '../helpers/server-process.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { cliRunner, ensureBuilt } from './support.js';

const PROGRESS_TOOLS = resolve(import.meta.dirname, '../fixtures/progress-tools.mjs');

describe('mcp-tasks under faults (spawned CLI, real server, fault proxy)', () => {
  const fixture = effectTools();
  const temp = makeTempDir('mcp-tasks-cli-faults-');
  const journalPath = join(temp.dir, 'tasks.json');
  const env: NodeJS.ProcessEnv = { ...process.env, MCP_TASKS_CLIENT_STATE: journalPath };
  delete env.MCP_TASKS_URL;
  delete env.MCP_TASKS_TOKEN;
  const { start, cli } = cliRunner(env);
  let running: RunningTasksServer;
  let proxy: FaultProxy | undefined;
  let label = 0;

  beforeAll(async () => {
    ensureBuilt();
    running = await startTasksServer({ tools: fixture.tools, limits: { pollIntervalMs: 100 } });
  });
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });
  afterAll(async () => {
    await running.close();
    temp.remove();
  });

  it.each(['2025-11-25', '2026-07-28'])('inspect prints the manifest of our server over %s', async (protocol) => {
    const run = await cli(['inspect', '--url', running.url, '--protocol', protocol]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`protocol MCP ${protocol}, tasks ${protocol === '2025-11-25' ? 'v1' : 'v2'}`);
    expect(run.stdout).toMatch(/digest {3}sha256:[0-9a-f]{64}/);
    expect(run.stdout).toMatch(protocol === '2025-11-25' ? /effect_job +optional/ : /effect_job +server-decides/);
  });

  it.each(['2025-11-25', '2026-07-28'])(
    'over %s, while the server is unreachable call says so and that the task keeps its id, then finishes',
    async (protocol) => {
      proxy = await FaultProxy.start(running.url);
      const tag = `cli-${++label}`;
      void proxy.arm({ method: 'tools/call', cut: 'after-answer', downMs: 1500 });
      const run = await cli(['call', 'effect_job', '--args', JSON.stringify({ label: tag, seconds: 0.5 }), '--url', proxy.url, '--protocol', protocol]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toBe(`effect ${tag} #1\n`);
      const id = run.stderr.match(/task (\S+) created/)?.[1];
      expect(run.stderr).toMatch(new RegExp(`server unreachable \\(.+\\); task ${id} keeps its id — retrying in \\d+\\.\\d s`));
      expect(run.stderr).toMatch(new RegExp(`server reachable again after \\d+\\.\\d s; following task ${id}`));
      expect(proxy.forwarded('tools/call')).toBe(1);
      expect(fixture.effects(tag)).toBe(1);
    },
  );

  it('a call whose answer is lost exits 8 (outcome unknown), is never resent, and stays listed by `tasks`', async () => {
    // Our server declares idempotency keys (issue 12); a front hides that, as a server that does not honour them.
    const undeclared = await startIdempotentFront(running.url, { strip: true });
    onTestFinished(() => undeclared.close());
    proxy = await FaultProxy.start(undeclared.url);
    const tag = `cli-${++label}`;
    void proxy.arm({ method: 'tools/call', cut: 'drop-answer', downMs: 200 });
    const run = await cli(['call', 'effect_job', '--args', JSON.stringify({ label: tag, seconds: 0 }), '--url', proxy.url]);
    expect(run.code).toBe(8);
    expect(run.stderr).toMatch(/outcome unknown: tools\/call effect_job was sent .* it was not resent/);
    const listed = await cli(['tasks', '--json']);
    const pending = JSON.parse(listed.stdout).pending as Array<Record<string, unknown>>;
    const entry = pending.find((call) => call.url === proxy?.url);
    expect(entry).toMatchObject({ tool: 'effect_job', idempotencyHonoured: false });
    expect(entry).not.toHaveProperty('arguments'); // arguments stay in the file, never on screen
    // resume reports it as unknown (exit 8) and does not resend it to a server that does not honour keys.
    const resumed = await cli(['resume', '--url', proxy.url]);
    expect(resumed.code).toBe(8);
    expect(resumed.stderr).toContain('does not declare that it honours idempotency keys, so it was not resent');
    await sleep(300);
    expect(proxy.forwarded('tools/call')).toBe(1);
    expect(fixture.effects(tag)).toBe(1);
  });

  it.each(['2025-11-25', '2026-07-28'])(
    'over %s, kill -9 of `call` after the task exists, then `resume` finishes it without a second tools/call',
    async (protocol) => {
      proxy = await FaultProxy.start(running.url); // used only to count what reaches the server
      const tag = `cli-${++label}`;
      const call = start(['call', 'effect_job', '--args', JSON.stringify({ label: tag, seconds: 1.5 }), '--url', proxy.url, '--protocol', protocol]);
      const [, id] = await call.stderrLine(/task (\S+) working/);
      // Killed once the first observation is journaled (status, lastUpdatedAt, next allowed poll).
      for (let tries = 0; !(await new TaskJournal(journalPath).get(id as string))?.nextPollAt && tries < 100; tries++) await sleep(20);
      call.child.kill('SIGKILL');
      await call.done;
      const entry = await new TaskJournal(journalPath).get(id as string);
      expect(entry).toMatchObject({
        tool: 'effect_job',
        lastStatus: 'working',
        correlationId: expect.any(String),
        idempotencyKey: expect.any(String),
        nextPollAt: expect.any(String),
      });
      const listed = await cli(['tasks']);
      expect(listed.stdout).toMatch(new RegExp(`${id} +effect_job +last seen working at `));
      const resumed = await cli(['resume', '--url', proxy.url]);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stdout).toBe(`effect ${tag} #1\n`);
      expect(resumed.stderr).toContain(`resuming task ${id} (effect_job, last seen working`);
      expect(proxy.forwarded('tools/call')).toBe(1);
      expect(fixture.effects(tag)).toBe(1);
      expect(await new TaskJournal(journalPath).get(id as string)).toBeUndefined();
    },
  );

  it('when recovery restarts the task after a server crash, call says so from the attempt number the server reports (attempt 2), though the new run first shows no count', async () => {
    const dataDir = join(temp.dir, 'restart-data');
    const log = join(temp.dir, 'stepped.log');
    const args = ['--no-builtins', '--tools', PROGRESS_TOOLS, '--lease-ms', '1000', '--poll-interval-ms', '200'];
    let server = await startServerProcess(dataDir, args);
    const port = Number(new URL(server.url).port);
    try {
      const call = start(['call', 'stepped_job', '--args', JSON.stringify({ steps: 40, stepMs: 150, log }), '--url', server.url]);
      await call.stderrLine(/step \((?:[89]|[1-3]\d)\/40\)/);
      await server.kill9();
      server = await startServerProcess(dataDir, args, {}, port);
      const run = await call.done;
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toBe('stepped 40\n');
      expect(run.stderr).toMatch(/server unreachable .* keeps its id/);
      expect(run.stderr).toMatch(/was restarted by the server: attempt 2, its progress starts again \(the previous run had reached \d+\/40\)/);
      expect(existsSync(log) && readFileSync(log, 'utf8')).toBe('run\nrun\n');
    } finally {
      await server.stop();
      writeFileSync(log, '');
    }
  });

  it.each(['resume', 'watch'])(
    '%s in a new process after a server crash says the server re-ran the task (attempt 2), not only its new progress; one without a re-run says nothing',
    async (command) => {
      const follow = (id: string, url: string) => cli(command === 'resume' ? ['resume', '--url', url] : ['watch', id, '--url', url]);
      const dataDir = join(temp.dir, 'resume-restart-data');
      const log = join(temp.dir, 'resumed.log');
      const args = ['--no-builtins', '--tools', PROGRESS_TOOLS, '--lease-ms', '1000', '--poll-interval-ms', '200'];
      let server = await startServerProcess(dataDir, args);
      const port = Number(new URL(server.url).port);
      try {
        const detached = await cli(['call', 'stepped_job', '--args', JSON.stringify({ steps: 30, stepMs: 100, log }), '--url', server.url, '--detach']);
        expect(detached.code, detached.stderr).toBe(0);
        const id = detached.stdout.trim();
        for (let tries = 0; !(existsSync(log) && readFileSync(log, 'utf8') === 'run\n') && tries < 200; tries++) await sleep(20);
        await sleep(300);
        await server.kill9();
        server = await startServerProcess(dataDir, args, {}, port);
        const resumed = await follow(id, server.url);
        expect(resumed.code, resumed.stderr).toBe(0);
        expect(resumed.stdout).toBe('stepped 30\n');
        expect(readFileSync(log, 'utf8')).toBe('run\nrun\n');
        expect(resumed.stderr).toContain(`task ${id} was restarted by the server: attempt 2, its progress starts again`);
        // Negative control: a task resumed without any re-run announces no restart.
        writeFileSync(log, '');
        const second = await cli(['call', 'stepped_job', '--args', JSON.stringify({ steps: 10, stepMs: 100, log }), '--url', server.url, '--detach']);
        const quiet = await follow(second.stdout.trim(), server.url);
        expect(quiet.code, quiet.stderr).toBe(0);
        if (command === 'resume') expect(quiet.stderr).toContain(`resuming task ${second.stdout.trim()}`);
        expect(quiet.stdout).toBe('stepped 10\n');
        expect(quiet.stderr).not.toContain('restarted by the server');
      } finally {
        await server.stop();
        writeFileSync(log, '');
      }
    },
  );
});
