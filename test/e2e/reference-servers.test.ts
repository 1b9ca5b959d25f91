/**
 * Our requestor (library and CLI) against servers we did not write (issue 13 item 8): the SDK 1.32 reference tasks
 * server from the SDK's own example (2025-11-25) and a plain SDK 2.4 server without tasks (2026-07-28).
 */
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CapabilityMissingError, connectTasksClient } from '../../src/client/index.js';
import { cliRunner, ensureBuilt } from '../cli/support.js';
import { type ReferenceServer, startPlainSdkServer, startSdkReferenceTasksServer } from '../helpers/reference-servers.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const temp = makeTempDir('mcp-tasks-reference-');
const env: NodeJS.ProcessEnv = { ...process.env, MCP_TASKS_CLIENT_STATE: join(temp.dir, 'tasks.json') };
delete env.MCP_TASKS_URL;
delete env.MCP_TASKS_TOKEN;
const { cli } = cliRunner(env);

afterAll(() => temp.remove());

describe('against the SDK 1.32 reference tasks server (2025-11-25)', () => {
  let reference: ReferenceServer;
  beforeAll(async () => {
    ensureBuilt();
    reference = await startSdkReferenceTasksServer();
  });
  afterAll(() => reference.close());

  it('inspect shows its manifest: v1, tasks operations from its capabilities, delay task-required', async () => {
    const run = await cli(['inspect', '--url', reference.url, '--json']);
    expect(run.code).toBe(0);
    const manifest = JSON.parse(run.stdout);
    expect(manifest).toMatchObject({
      manifestVersion: 1,
      protocolVersion: '2025-11-25',
      generation: 'v1',
      server: { name: 'simple-streamable-http-server' },
      taskOperations: ['cancel', 'get', 'list', 'result'],
      idempotencyKeys: false,
    });
    expect(manifest.session).toMatchObject({ kind: 'initialize', sessionId: expect.any(String) });
    expect(manifest.tools).toEqual([
      { name: 'delay', taskMode: 'required' },
      { name: 'greet', taskMode: 'forbidden' },
      { name: 'report', taskMode: 'required' },
    ]);
  });

  it('call follows a task to its result (one tools/call); --task required works on a task tool', async () => {
    const before = reference.toolCalls();
    const run = await cli(['call', 'delay', '--args', '{"duration":400}', '--url', reference.url, '--task', 'required']);
    expect([run.code, run.stdout]).toEqual([0, 'Completed 400ms delay\n']);
    expect(run.stderr).toMatch(/task \S+ created \(tasks v1, MCP 2025-11-25/);
    expect(reference.toolCalls()).toBe(before + 1);
  });

  it('watch and cancel work on its tasks through the library on one connection', async () => {
    const client = await connectTasksClient({ url: reference.url, journal: false });
    try {
      const watched = await client.callTool('delay', { duration: 300 });
      if (watched.kind !== 'task') throw new Error('expected a task');
      const seen: string[] = [];
      for await (const snapshot of client.watch(watched.taskId, { timeoutMs: 15_000 })) seen.push(snapshot.status);
      expect(seen.at(-1)).toBe('completed');
      await expect(client.getResult(watched.taskId)).resolves.toMatchObject({ content: [{ text: 'Completed 300ms delay' }] });

      const cancelled = await client.callTool('delay', { duration: 60_000 });
      if (cancelled.kind !== 'task') throw new Error('expected a task');
      expect((await client.cancelTask(cancelled.taskId))?.status).toBe('cancelled');
      expect((await client.getTask(cancelled.taskId)).status).toBe('cancelled');
    } finally {
      await client.close();
    }
  });

  it('it binds tasks to the session, so a watch from another process finds nothing: exit 4, never a second call', async () => {
    // A known defect of the reference (issue 14 reports it): a task is visible only in the session that created it.
    const detached = await cli(['call', 'delay', '--args', '{"duration":500}', '--url', reference.url, '--detach']);
    expect(detached.code).toBe(0);
    const before = reference.toolCalls();
    const watch = await cli(['watch', detached.stdout.trim()]);
    expect(watch.code).toBe(4);
    expect(watch.stderr).toContain('not found');
    expect(reference.toolCalls()).toBe(before);
  });

  it('outcome.immediateResponse carries the CreateTaskResult _meta "model-immediate-response" (R15); call prints it', async () => {
    const client = await connectTasksClient({ url: reference.url, journal: false });
    try {
      const outcome = await client.callTool('report', { topic: 'logs' });
      expect(outcome).toMatchObject({ kind: 'task', immediateResponse: 'Report on logs started; it takes a minute.' });
    } finally {
      await client.close();
    }
    const run = await cli(['call', 'report', '--args', '{"topic":"cli"}', '--url', reference.url]);
    expect(run.stderr).toContain('mcp-tasks: server says: Report on cli started; it takes a minute.');
  });

  it('a greet (taskSupport forbidden) with --task required is refused by policy: exit 7, nothing sent', async () => {
    const before = reference.toolCalls();
    const run = await cli(['call', 'greet', '--args', '{"name":"x"}', '--url', reference.url, '--task', 'required']);
    expect(run.code).toBe(7);
    expect(run.stderr).toContain('tool greet does not run as a task (taskSupport: forbidden)');
    expect(reference.toolCalls()).toBe(before);
  });
});

describe('against a plain SDK 2.4 server without tasks (2026-07-28)', () => {
  let plain: ReferenceServer;
  beforeAll(async () => {
    ensureBuilt();
    plain = await startPlainSdkServer();
  });
  afterAll(() => plain.close());

  it('--task required --fallback reject exits 7 without sending tools/call', async () => {
    const run = await cli(['call', 'echo', '--args', '{"text":"hi"}', '--url', plain.url, '--task', 'required', '--fallback', 'reject']);
    expect(run.code).toBe(7);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('MCP 2026-07-28 offers no tasks');
    expect(plain.toolCalls()).toBe(0);
  });

  it('the library throws a typed CapabilityMissingError listing what is missing, before any tools/call', async () => {
    const client = await connectTasksClient({ url: plain.url, journal: false });
    try {
      const error = await client.callTool('echo', { text: 'x' }, { task: 'required', needs: { cancel: true } }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(CapabilityMissingError);
      expect(error).toMatchObject({
        tool: 'echo',
        policy: 'required',
        missing: ['MCP 2026-07-28 offers no tasks', 'tasks/cancel is not offered (no tasks.cancel capability)'],
      });
      expect(plain.toolCalls()).toBe(0);
    } finally {
      await client.close();
    }
  });

  it('negative control: --fallback sync runs the call inline (so a sent call is counted)', async () => {
    const run = await cli([
      'call',
      'echo',
      '--args',
      '{"text":"inline"}',
      '--url',
      plain.url,
      '--task',
      'preferred',
      '--fallback',
      'sync',
      '--max-sync-ms',
      '5000',
    ]);
    expect([run.code, run.stdout]).toEqual([0, 'inline\n']);
    expect(plain.toolCalls()).toBe(1);
  });
});
