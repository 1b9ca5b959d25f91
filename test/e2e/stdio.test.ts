/**
 * Both task generations over stdio against the real CLI (`mcp-tasks serve --stdio`), driven by the official clients:
 * the SDK 1.32.2 client (2025-11-25 tasks) and the 2.4 client (2026-07-28, Tasks Extension; the task-creating
 * `tools/call` goes through the raw transport path because the 2.4 client rejects `resultType: "task"`).
 * Stdio carries no HTTP statuses, no `Mcp-Name` headers and no authentication, so `-32020` and status checks live in
 * the HTTP suites, and v1 `tasks/list` is not offered (R51).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client as V2Client } from '@modelcontextprotocol/client';
import { StdioClientTransport as V2StdioTransport } from '@modelcontextprotocol/client/stdio';
import { resultFromTaskOutcome, type TaskEnabledSession, TaskFailedError } from '@modelcontextprotocol/ext-tasks/client';
import { DetailedTaskV2Schema } from '@modelcontextprotocol/ext-tasks/core/v2';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema, CreateTaskResultSchema, ListTasksResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  createV2TaskSession,
  NOT_FOUND,
  pollUntil,
  RANDOM_ID,
  type RawDispatch,
  rejection,
  RELATED_TASK,
  transportRawDispatch,
  v2Capabilities,
  v2Framing,
} from '../helpers/official-clients.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { TASKS_EXTENSION } from '../helpers/wire.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CLI = join(ROOT, 'dist/cli/main.js');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Build `dist` when the CLI is missing or older than the sources (`npm test` builds in `pretest` already). */
function ensureBuilt(): void {
  if (existsSync(CLI) && statSync(CLI).mtimeMs >= newestMtime(join(ROOT, 'src'))) return;
  try {
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json')], { cwd: ROOT, stdio: 'pipe' });
  } catch (error) {
    // Type errors elsewhere still emit; only a missing CLI is fatal.
    if (!existsSync(CLI)) throw error;
  }
}

function serverParameters(dataDir: string): { command: string; args: string[]; stderr: 'pipe'; cwd: string } {
  return {
    command: process.execPath,
    args: [CLI, 'serve', '--stdio', '--no-builtins', '--fixtures', 'conformance', '--data-dir', dataDir, '--poll-interval-ms', '50', '--log-level', 'warn'],
    stderr: 'pipe',
    cwd: ROOT,
  };
}

type V1Task = { taskId: string; status: string; statusMessage?: string; ttl: number | null };

describe('stdio: 2025-11-25 tasks with the SDK 1.32.2 client', () => {
  const temp = makeTempDir('mcp-tasks-stdio-v1-');
  let client: V1Client;

  const create = async (name: string, args: Record<string, unknown>): Promise<V1Task> =>
    (await client.request({ method: 'tools/call', params: { name, arguments: args } }, CreateTaskResultSchema, { task: { ttl: 60_000 } })).task as V1Task;
  const get = async (taskId: string): Promise<V1Task> => (await client.experimental.tasks.getTask(taskId)) as V1Task;
  const settle = (taskId: string): Promise<V1Task> =>
    pollUntil(
      () => get(taskId),
      (task) => ['completed', 'failed', 'cancelled'].includes(task.status),
      { what: `task ${taskId}` },
    );

  beforeAll(async () => {
    ensureBuilt();
    client = new V1Client({ name: 'sdk-1.32.2-stdio', version: '1.0.0' });
    await client.connect(new V1StdioTransport(serverParameters(temp.dir)));
  }, 120_000);
  afterAll(async () => {
    await client?.close();
    temp.remove();
  });

  it('R1/R4/R51 initialize negotiates 2025-11-25 with tasks.cancel and tasks.requests.tools.call, and no tasks.list (no requestor identity)', async () => {
    expect(client.getServerCapabilities()?.tasks).toEqual({ cancel: {}, requests: { tools: { call: {} } } });
    const { tools } = await client.listTools();
    expect(Object.fromEntries(tools.map((tool) => [tool.name, tool.execution?.taskSupport]))).toMatchObject({
      greet: 'forbidden',
      slow_compute: 'optional',
      failing_job: 'required',
      protocol_error_job: 'optional',
      confirm_delete: 'optional',
    });
  });

  it('R12–R14/R19/R23–R26 create, tasks/get, and tasks/result returning the CallToolResult with related-task _meta', async () => {
    const task = await create('slow_compute', { seconds: 0.2, label: 'stdio' });
    expect(task).toMatchObject({ status: 'working', ttl: 60_000 });
    expect(await get(task.taskId)).toMatchObject({ taskId: task.taskId });
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'Computed stdio after 0.2s' }]);
    expect(result._meta).toEqual({ [RELATED_TASK]: { taskId: task.taskId } });
    expect((await get(task.taskId)).status).toBe('completed');
  });

  it('R47/R25 isError fails the task and tasks/result returns it; a thrown protocol error is replayed by tasks/result', async () => {
    const failing = await create('failing_job', {});
    expect(await settle(failing.taskId)).toMatchObject({ status: 'failed', statusMessage: 'The job failed: simulated tool error' });
    expect(await client.experimental.tasks.getTaskResult(failing.taskId, CallToolResultSchema)).toMatchObject({ isError: true });
    const thrown = await create('protocol_error_job', {});
    expect((await settle(thrown.taskId)).status).toBe('failed');
    expect(await rejection(client.experimental.tasks.getTaskResult(thrown.taskId, CallToolResultSchema))).toEqual({
      code: -32603,
      message: 'Simulated protocol error: upstream unavailable',
    });
  });

  it('R41/R42/R40/D4 tasks/cancel answers cancelled; it stays cancelled; a second cancel is -32602; tasks/result answers -32603 at once', async () => {
    const task = await create('slow_compute', { seconds: 600 });
    expect(await client.experimental.tasks.cancelTask(task.taskId)).toMatchObject({ taskId: task.taskId, status: 'cancelled' });
    expect((await get(task.taskId)).status).toBe('cancelled');
    expect(await rejection(client.experimental.tasks.cancelTask(task.taskId))).toEqual({
      code: -32602,
      message: "Cannot cancel task: already in terminal status 'cancelled'",
    });
    expect(await rejection(client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema))).toEqual({
      code: -32603,
      message: 'Task was cancelled',
    });
  });

  it('R8/R10 taskSupport violations answer -32601; R45 unknown ids answer -32602', async () => {
    expect(
      (await rejection(client.request({ method: 'tools/call', params: { name: 'greet', arguments: { name: 'x' } } }, CreateTaskResultSchema, { task: {} })))
        .code,
    ).toBe(-32601);
    expect((await rejection(client.request({ method: 'tools/call', params: { name: 'failing_job', arguments: {} } }, CallToolResultSchema))).code).toBe(-32601);
    expect(await rejection(client.experimental.tasks.getTask(RANDOM_ID))).toEqual(NOT_FOUND);
    expect(await rejection(client.experimental.tasks.getTaskResult(RANDOM_ID, CallToolResultSchema))).toEqual(NOT_FOUND);
    expect(await rejection(client.experimental.tasks.cancelTask(RANDOM_ID))).toEqual(NOT_FOUND);
  });

  it('R51/C-V1-27 tasks/list answers -32601 on stdio (no authentication, so no requestor identity)', async () => {
    expect((await rejection(client.experimental.tasks.listTasks())).code).toBe(-32601);
    expect((await rejection(client.request({ method: 'tasks/list', params: {} }, ListTasksResultSchema))).code).toBe(-32601);
  });
});

/** A 2.4 client on the 2026-07-28 era over stdio, plus the raw path on its own transport. */
async function connectV2Stdio(dataDir: string, declareExtension: boolean): Promise<{ client: V2Client; raw: RawDispatch; close(): Promise<void> }> {
  const transport = new V2StdioTransport(serverParameters(dataDir));
  const client = new V2Client(
    { name: 'client-2.4.0-e2e', version: '1.0.0' },
    { capabilities: v2Capabilities(declareExtension), versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(transport);
  return { client, raw: transportRawDispatch(transport), close: () => client.close() };
}

/** A framed 2026-07-28 request for the raw path. */
function framed(method: string, params: Record<string, unknown>, declareExtension = true): { method: string; params: Record<string, unknown> } {
  const framing = v2Framing(declareExtension);
  return {
    method,
    params: {
      ...params,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': framing.protocolVersion,
        'io.modelcontextprotocol/clientInfo': framing.clientInfo,
        'io.modelcontextprotocol/clientCapabilities': framing.clientCapabilities,
      },
    },
  };
}

describe('stdio: the Tasks Extension with the 2.4 client (and ext-tasks)', () => {
  const temp = makeTempDir('mcp-tasks-stdio-v2-');
  let declaring: Awaited<ReturnType<typeof connectV2Stdio>>;
  let plain: Awaited<ReturnType<typeof connectV2Stdio>>;
  let session: TaskEnabledSession;

  beforeAll(async () => {
    ensureBuilt();
    declaring = await connectV2Stdio(temp.dir, true);
    plain = await connectV2Stdio(temp.dir, false);
    session = createV2TaskSession(declaring.client, declaring.raw, 'stdio-e2e');
  }, 120_000);
  afterAll(async () => {
    await session?.close();
    await declaring?.close();
    await plain?.close();
    temp.remove();
  });

  it('E1 the pinned 2026-07-28 era sees the extension capability', () => {
    expect(declaring.client.getProtocolEra()).toBe('modern');
    expect(declaring.client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    expect((declaring.client.getServerCapabilities() as Record<string, unknown>).extensions).toEqual({
      [TASKS_EXTENSION]: {},
      'dev.mcp-tasks/idempotency': {},
    });
  });

  it('E8/E14/E19 tools/call creates a task (resultType "task"); polling tasks/get with the 2.4 client reaches completed with the result inline', async () => {
    const created = await declaring.raw(framed('tools/call', { name: 'slow_compute', arguments: { seconds: 0.1, label: 'stdio-v2' } }) as never);
    if (created.kind !== 'result') expect.fail(JSON.stringify(created));
    const task = created.result as Record<string, unknown>;
    expect(task).toMatchObject({ resultType: 'task', status: 'working' });
    expect(task).not.toHaveProperty('content');
    const taskId = String(task.taskId);
    const done = await pollUntil(
      () => declaring.client.request({ method: 'tasks/get', params: { taskId } }, DetailedTaskV2Schema),
      (detailed) => detailed.status === 'completed',
    );
    expect(done).toMatchObject({ taskId, status: 'completed', result: { content: [{ type: 'text', text: 'Computed stdio-v2 after 0.1s' }] } });
  });

  it('E13 through an ext-tasks session: isError completes, a thrown protocol error fails with TaskFailedError', async () => {
    const isError = await session.callTool('failing_job', {});
    expect(isError.kind).toBe('task');
    const completed = (await isError.settle()).outcome;
    expect(completed.status).toBe('completed');
    expect(resultFromTaskOutcome(completed)).toMatchObject({ isError: true });
    const thrown = (await (await session.callTool('protocol_error_job', {})).settle()).outcome;
    expect(thrown.status).toBe('failed');
    if (thrown.status === 'failed') {
      expect(thrown.error).toBeInstanceOf(TaskFailedError);
      expect(thrown.error.code).toBe(-32603);
    }
  });

  it('E30 cancel is acknowledged and the task ends cancelled', async () => {
    const execution = await session.callTool('slow_compute', { seconds: 600 });
    if (execution.kind !== 'task') expect.fail('expected a task');
    await execution.cancel();
    expect((await execution.settle()).outcome.status).toBe('cancelled');
    expect((await session.task(execution.handle.taskId).snapshot()).status).toBe('cancelled');
  });

  it('E39 an unknown task id answers -32602', async () => {
    expect(await rejection(declaring.client.request({ method: 'tasks/get', params: { taskId: RANDOM_ID } }, DetailedTaskV2Schema))).toEqual(NOT_FOUND);
    const cancelled = await declaring.raw(framed('tasks/cancel', { taskId: RANDOM_ID }) as never);
    expect(cancelled).toEqual({ kind: 'error', error: NOT_FOUND });
  });

  it('E6/E41 without the extension: a task-required tool and tasks/get answer -32021; a task-optional tool answers inline', async () => {
    const required = await rejection(plain.client.callTool({ name: 'failing_job', arguments: {} }));
    expect(required).toMatchObject({ code: -32021, data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } } });
    const created = await declaring.raw(framed('tools/call', { name: 'slow_compute', arguments: { seconds: 0 } }) as never);
    if (created.kind !== 'result') expect.fail(JSON.stringify(created));
    const taskId = String((created.result as { taskId: string }).taskId);
    expect((await rejection(plain.client.request({ method: 'tasks/get', params: { taskId } }, DetailedTaskV2Schema))).code).toBe(-32021);
    const inline = await plain.client.callTool({ name: 'slow_compute', arguments: { seconds: 0, label: 'inline' } });
    expect(inline.content).toEqual([{ type: 'text', text: 'Computed inline after 0s' }]);
  });

  it('E42 tasks/result answers -32601 (sent raw: the 2.4 client refuses it on 2026-07-28)', async () => {
    const response = await declaring.raw(framed('tasks/result', { taskId: RANDOM_ID }) as never);
    expect(response.kind).toBe('error');
    if (response.kind === 'error') expect(response.error.code).toBe(-32601);
  });
});
