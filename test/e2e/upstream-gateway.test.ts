/**
 * Issue 28: `mcp-tasks serve --upstream` in front of a real MCP server that knows nothing of tasks —
 * `@modelcontextprotocol/server-everything` 2026.8.31 from npm over stdio (pinned in tools/upstream-servers) — driven
 * by the official clients of both generations (SDK 1.32.2 for 2025-11-25 tasks, client 2.4.0 + ext-tasks 0.2.2 for
 * the 2026-07-28 Tasks Extension). What crossed the wire to the upstream is read from a recording relay in front of it
 * (test/fixtures/upstream-tap.mjs), never assumed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema, CreateTaskResultSchema, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ensureBuilt } from '../cli/support.js';
import {
  connectV1Http,
  connectV2Http,
  createV2TaskSession,
  httpRawDispatch,
  pollUntil,
  RELATED_TASK,
  TERMINAL,
  type V1HttpClient,
  type V2HttpClient,
} from '../helpers/official-clients.js';
import { eventually } from '../helpers/run-notes.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { everythingServer, everythingStdio, filesystemServer, stdioSpec, tapEntries, type TapEntry } from '../helpers/upstream-servers.js';

const LONG = 'trigger-long-running-operation';

type V1Task = { taskId: string; status: string; statusMessage?: string };

async function createV1Task(client: V1Client, name: string, args: Record<string, unknown>, onprogress?: (progress: Progress) => void): Promise<V1Task> {
  const created = await client.request({ method: 'tools/call', params: { name, arguments: args } }, CreateTaskResultSchema, {
    task: { ttl: 60_000 },
    ...(onprogress ? { onprogress } : {}),
  });
  return created.task as V1Task;
}

const getV1Task = (client: V1Client, taskId: string): Promise<V1Task> => client.experimental.tasks.getTask(taskId) as Promise<V1Task>;

/** The `tools/call` requests of `tool` the gateway sent through the tap, in order. */
function callsOf(log: string, tool: string): TapEntry[] {
  return tapEntries(log).filter((entry) => entry.dir === 'in' && entry.message?.method === 'tools/call' && entry.message.params?.name === tool);
}

/** The pid of the real server behind the newest tap of `log`. */
function newestServerPid(log: string): number {
  const start = tapEntries(log)
    .filter((entry) => entry.dir === 'start')
    .at(-1);
  if (start?.server === undefined) throw new Error('no tap started');
  return start.server;
}

async function readyz(server: ServerProcess): Promise<{ checks: { executor: { upstreams?: Array<Record<string, unknown>> } } }> {
  const response = await fetch(server.url.replace(/\/mcp$/, '/readyz'));
  return (await response.json()) as never;
}

describe('serve --upstream with server-everything over stdio (issue 28)', () => {
  const temp = makeTempDir('mcp-tasks-upstream-');
  const tap = join(temp.dir, 'everything.tap');
  let server: ServerProcess;
  let v1: V1HttpClient;
  let v2: V2HttpClient;
  let direct: V1Client;

  beforeAll(async () => {
    ensureBuilt();
    server = await startServerProcess(join(temp.dir, 'data'), [
      '--no-builtins',
      '--upstream',
      everythingStdio('everything', tap),
      '--upstream',
      everythingStdio('other'),
      '--status-flush-interval-ms',
      '50',
      '--poll-interval-ms',
      '100',
    ]);
    v1 = await connectV1Http(server.url, { declareTasks: true });
    v2 = await connectV2Http(server.url, { mode: 'auto' });
    // The same server, spoken to directly: what the gateway must pass on unchanged.
    // Declaring elicitation as the gateway does: server-everything lists its asking tools only to such a client.
    direct = new V1Client({ name: 'direct', version: '1.0.0' }, { capabilities: { elicitation: { form: {}, url: {} } } });
    await direct.connect(new StdioClientTransport({ command: process.execPath, args: [everythingServer(), 'stdio'], stderr: 'ignore' }));
  }, 120_000);
  afterAll(async () => {
    await v1?.close();
    await v2?.close();
    await direct?.close();
    await server?.stop();
    temp.remove();
  });

  it('tools/list lists every upstream tool as <name>_<tool> with its title, description and JSON Schemas unchanged; R9 taskSupport optional by default', async () => {
    const all = (await direct.listTools()).tools;
    // R9: a tool the upstream runs only as a task (server-everything's simulate-research-query) is left out, with a
    // start line saying why: a plain tools/call of it fails -32601 every time, and upstream tasks are not forwarded.
    const required = all.filter((tool) => tool.execution?.taskSupport === 'required').map((tool) => tool.name);
    expect(required).toContain('simulate-research-query');
    const upstream = all.filter((tool) => !required.includes(tool.name));
    const ours = (await v1.client.listTools()).tools;
    for (const name of required) {
      expect(ours.map((tool) => tool.name)).not.toContain(`everything_${name}`);
      const line = server
        .log()
        .split('\n')
        .find((entry) => entry.includes(`"tool":"${name}"`));
      expect(line).toContain('upstream tool left out: the upstream requires task augmentation for it');
    }
    expect(upstream.length).toBeGreaterThan(5);
    // The count /readyz (and the banner) shows is of the tools listed here.
    expect((await readyz(server)).checks.executor.upstreams?.[0]).toMatchObject({ name: 'everything', tools: upstream.length });
    for (const tool of upstream) {
      const listed = ours.find((entry) => entry.name === `everything_${tool.name}`);
      expect(listed, tool.name).toBeDefined();
      expect(listed?.inputSchema, tool.name).toEqual(tool.inputSchema);
      expect(listed?.outputSchema, tool.name).toEqual(tool.outputSchema);
      expect(listed?.description).toBe(tool.description);
      expect(listed?.title).toBe(tool.title);
      expect(listed?.execution).toEqual({ taskSupport: 'optional' });
    }
    // At least one upstream tool has an outputSchema, so the pass-through of output schemas is exercised.
    expect(upstream.some((tool) => tool.outputSchema !== undefined)).toBe(true);
    expect(ours.filter((entry) => entry.name.startsWith('other_'))).toHaveLength(upstream.length);
    // The gateway declares elicitation upstream (its questions are forwarded: upstream-elicitation.test.ts), and
    // server-everything lists its asking tools only to clients that do.
    expect(ours.map((entry) => entry.name)).toContain('everything_trigger-elicitation-request');
  });

  it('R9/R31/R36 v1: a long upstream operation becomes a task; its progress shows in statusMessage and reaches the client, and it completes with the upstream result', async () => {
    const progress: Progress[] = [];
    const task = await createV1Task(v1.client, `everything_${LONG}`, { duration: 1.5, steps: 3 }, (update) => progress.push(update));
    expect(task.status).toBe('working');
    const progressed = await pollUntil(
      () => getV1Task(v1.client, task.taskId),
      (current) => /\(\d\/3\)/.test(current.statusMessage ?? '') || TERMINAL.includes(current.status),
      { what: 'progress in statusMessage' },
    );
    expect(progressed.statusMessage).toMatch(/^everything: progress \([123]\/3\)$/);
    const done = await pollUntil(
      () => getV1Task(v1.client, task.taskId),
      (current) => TERMINAL.includes(current.status),
    );
    expect(done.status).toBe('completed');
    const result = await v1.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'Long running operation completed. Duration: 1.5 seconds, Steps: 3.' }]);
    // R31/R36: the client's own progressToken got the upstream's progress, all of it, in order, each related to the
    // task. They come on the session's stream and the result on the request's, so the last may come after the result.
    const expected = [1, 2, 3].map((step) => [step, 3, `everything: progress (${step}/3)`]);
    await eventually('the third progress notification', () => progress.length >= 3 || undefined, 3_000);
    expect(progress.map((update) => [update.progress, update.total, update.message])).toEqual(expected);
    const related = (update: Progress) => ((update as { _meta?: Record<string, { taskId?: string }> })._meta?.[RELATED_TASK] ?? {}).taskId;
    expect(progress.map(related)).toEqual(progress.map(() => task.taskId));
    // The gateway asked the upstream for progress, and the upstream sent it for that call.
    const [call] = callsOf(tap, LONG);
    const token = (call?.message?.params?._meta as { progressToken?: unknown } | undefined)?.progressToken;
    expect(token).toBeDefined();
    expect(
      tapEntries(tap).filter(
        (entry) => entry.dir === 'out' && entry.message?.method === 'notifications/progress' && entry.message.params?.progressToken === token,
      ),
    ).toHaveLength(3);
  });

  it('E8/E14 v2 (client 2.4 + ext-tasks): the same call is a task that settles completed with the upstream result', async () => {
    const session = createV2TaskSession(v2.client, httpRawDispatch(server.url, v2.http));
    try {
      const execution = await session.callTool(`everything_${LONG}`, { duration: 1.2, steps: 2 });
      expect(execution.kind).toBe('task');
      const { outcome } = await execution.settle();
      expect(outcome.status).toBe('completed');
      expect(resultFromTaskOutcome(outcome)).toMatchObject({
        content: [{ type: 'text', text: 'Long running operation completed. Duration: 1.2 seconds, Steps: 2.' }],
      });
    } finally {
      await session.close();
    }
  });

  it('structured content and resource links come back exactly as the upstream returns them', async () => {
    for (const [tool, args] of [
      ['get-structured-content', { location: 'New York' }],
      ['get-resource-links', { count: 2 }],
    ] as const) {
      const upstream = await direct.callTool({ name: tool, arguments: args });
      const task = await createV1Task(v1.client, `everything_${tool}`, args);
      await pollUntil(
        () => getV1Task(v1.client, task.taskId),
        (current) => TERMINAL.includes(current.status),
      );
      const ours = await v1.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      expect(ours.content, tool).toEqual(upstream.content);
      expect(ours.structuredContent, tool).toEqual(upstream.structuredContent);
    }
    const links = await direct.callTool({ name: 'get-resource-links', arguments: { count: 2 } });
    expect((links.content as Array<{ type: string }>).filter((block) => block.type === 'resource_link')).toHaveLength(2);
  });

  it('E13/R47 an upstream isError result stays isError: a v2 task completes with it, a v1 task fails with it', async () => {
    const upstream = await direct.callTool({ name: 'get-sum', arguments: { a: 'not a number', b: 1 } });
    expect(upstream.isError).toBe(true);
    const session = createV2TaskSession(v2.client, httpRawDispatch(server.url, v2.http));
    try {
      const execution = await session.callTool('everything_get-sum', { a: 'not a number', b: 1 });
      const { outcome } = await execution.settle();
      expect(outcome.status).toBe('completed');
      expect(resultFromTaskOutcome(outcome)).toMatchObject({ isError: true, content: upstream.content });
    } finally {
      await session.close();
    }
    const task = await createV1Task(v1.client, 'everything_get-sum', { a: 'not a number', b: 1 });
    const done = await pollUntil(
      () => getV1Task(v1.client, task.taskId),
      (current) => TERMINAL.includes(current.status),
    );
    expect(done.status).toBe('failed');
    const result = await v1.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result).toMatchObject({ isError: true, content: upstream.content });
  });

  it('R41 cancel reaches the upstream: the gateway sends notifications/cancelled for the very tools/call it forwarded', async () => {
    const before = callsOf(tap, LONG).length;
    const task = await createV1Task(v1.client, `everything_${LONG}`, { duration: 30, steps: 30 });
    await pollUntil(
      () => getV1Task(v1.client, task.taskId),
      (current) => /\(\d+\/30\)/.test(current.statusMessage ?? ''),
      { what: 'the upstream call to report progress' },
    );
    const call = callsOf(tap, LONG)[before];
    expect(call?.message?.params?.arguments).toEqual({ duration: 30, steps: 30 });
    await v1.client.experimental.tasks.cancelTask(task.taskId);
    const cancelled = await eventually('notifications/cancelled upstream', () =>
      tapEntries(tap).find(
        (entry) => entry.dir === 'in' && entry.message?.method === 'notifications/cancelled' && entry.message.params?.requestId === call?.message?.id,
      ),
    );
    expect(cancelled.at).toBeGreaterThan(call?.at ?? 0);
    expect((await getV1Task(v1.client, task.taskId)).status).toBe('cancelled');
    // Negative control: the calls that were not cancelled got no notifications/cancelled.
    const cancelledIds = tapEntries(tap)
      .filter((entry) => entry.message?.method === 'notifications/cancelled')
      .map((entry) => entry.message?.params?.requestId);
    expect(cancelledIds).toEqual([call?.message?.id]);
  });

  it('a dying upstream fails its running task with a clear reason; the other upstream keeps serving, and the dead one is restarted', async () => {
    const task = await createV1Task(v1.client, `everything_${LONG}`, { duration: 30, steps: 30 });
    await pollUntil(
      () => getV1Task(v1.client, task.taskId),
      (current) => /\(\d+\/30\)/.test(current.statusMessage ?? ''),
      { what: 'the upstream call to run' },
    );
    const victim = newestServerPid(tap);
    process.kill(victim, 'SIGKILL');
    const failed = await pollUntil(
      () => getV1Task(v1.client, task.taskId),
      (current) => TERMINAL.includes(current.status),
    );
    expect(failed.status).toBe('failed');
    expect(failed.statusMessage).toMatch(
      /^Upstream everything stopped while trigger-long-running-operation ran \(the process exited.*\); it may have done part of the work, so the call is not sent again$/,
    );
    const error = await v1.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema).then(
      () => undefined,
      (thrown: { code?: number; data?: unknown }) => thrown,
    );
    expect(error).toMatchObject({ code: -32603, data: { reason: 'upstream_down', upstream: 'everything' } });
    // The other upstream never noticed.
    const echoed = await v1.client.callTool({ name: 'other_echo', arguments: { message: 'still here' } });
    expect(echoed.content).toEqual([{ type: 'text', text: 'Echo: still here' }]);
    // The dead one comes back (a new process behind a new tap), and /readyz tells the story.
    const status = await eventually('everything to be restarted', async () => {
      const upstreams = (await readyz(server)).checks.executor.upstreams ?? [];
      const everything = upstreams.find((entry) => entry.name === 'everything');
      return everything?.state === 'ready' && everything.restarts === 1 ? everything : undefined;
    });
    expect(status).toMatchObject({ transport: 'stdio', error: expect.stringMatching(/^the process exited/) });
    expect(newestServerPid(tap)).not.toBe(victim);
    const metrics = await (await fetch(server.url.replace(/\/mcp$/, '/metrics'))).text();
    expect(metrics).toMatch(/^mcp_tasks_upstream_up\{[^}]*upstream="everything"[^}]*\} 1$/m);
    expect(metrics).toMatch(/^mcp_tasks_upstream_restarts\{[^}]*upstream="everything"[^}]*\} 1$/m);
    expect(metrics).toMatch(/^mcp_tasks_upstream_restarts\{[^}]*upstream="other"[^}]*\} 0$/m);
    const again = await v1.client.callTool({ name: 'everything_echo', arguments: { message: 'back' } });
    expect(again.content).toEqual([{ type: 'text', text: 'Echo: back' }]);
  });
});

describe('serve --upstream with server-filesystem over stdio (issue 28)', () => {
  const temp = makeTempDir('mcp-tasks-upstream-fs-');
  let server: ServerProcess;
  let v2: V2HttpClient;

  beforeAll(async () => {
    ensureBuilt();
    mkdirSync(join(temp.dir, 'files'));
    writeFileSync(join(temp.dir, 'files', 'notes.txt'), 'first line\nsecond line\n');
    server = await startServerProcess(join(temp.dir, 'data'), [
      '--no-builtins',
      '--upstream',
      stdioSpec('fs', [process.execPath, filesystemServer(), join(temp.dir, 'files')]),
    ]);
    v2 = await connectV2Http(server.url, { mode: 'auto' });
  }, 120_000);
  afterAll(async () => {
    await v2?.close();
    await server?.stop();
    temp.remove();
  });

  it('a file read through the gateway returns the file, and a path outside its directories is refused by the upstream (isError)', async () => {
    const listed = (await v2.client.listTools()).tools.map((tool) => tool.name);
    expect(listed).toEqual(expect.arrayContaining(['fs_read_text_file', 'fs_list_directory', 'fs_list_allowed_directories']));
    const session = createV2TaskSession(v2.client, httpRawDispatch(server.url, v2.http));
    try {
      const read = await session.callTool('fs_read_text_file', { path: join(temp.dir, 'files', 'notes.txt') });
      const result = resultFromTaskOutcome((await read.settle()).outcome) as { content: Array<{ text?: string }>; isError?: boolean };
      expect(result.isError).toBeUndefined();
      expect(result.content[0]?.text).toBe('first line\nsecond line\n');
      const outside = await session.callTool('fs_read_text_file', { path: '/etc/hostname' });
      const refused = resultFromTaskOutcome((await outside.settle()).outcome) as { content: Array<{ text?: string }>; isError?: boolean };
      expect(refused.isError).toBe(true);
      expect(refused.content[0]?.text).toMatch(/outside allowed directories|Access denied/i);
    } finally {
      await session.close();
    }
  });
});
