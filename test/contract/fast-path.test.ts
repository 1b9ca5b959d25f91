import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { TasksError } from '../../src/core/errors.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import { RawLegacySession } from '../helpers/sse.js';
import { startTasksServer, type RunningTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { postModern, type WireResponse } from '../helpers/wire.js';

/**
 * The fast path answers hot task requests without the SDK's per-request machinery. The issue allows it only with
 * proof that its responses equal the SDK path's for every status and error: two servers share one database, one
 * with the fast path and one without, and every request is sent to both.
 */

const ELICITATION = { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } };

const tools = [
  ...conformanceFixtureTools(),
  defineTool({
    name: 'tool_error',
    description: 'isError result',
    execution: 'task-optional',
    inputSchema: z.object({}),
    async run() {
      return textResult('bad input somewhere', { isError: true });
    },
  }),
  defineTool({
    name: 'coded_error',
    description: 'a protocol error with data',
    execution: 'task-optional',
    inputSchema: z.object({}),
    async run() {
      throw new TasksError(-32602, 'no such widget', { widget: 7 });
    },
  }),
];

/** What must be equal: HTTP status, content type and the JSON-RPC message(s). */
function shape(response: WireResponse): unknown {
  return { status: response.status, type: response.headers.get('content-type'), messages: response.messages };
}

/** Values that differ between two creates (ids and times) replaced by their type. */
function created(response: WireResponse): unknown {
  return JSON.parse(JSON.stringify(shape(response)), (key, value) => (['taskId', 'createdAt', 'lastUpdatedAt'].includes(key) ? typeof value : value));
}

describe('fast path answers exactly like the SDK path', () => {
  const temp = makeTempDir();
  const dbPath = join(temp.dir, 'tasks.db');
  let fast: RunningTasksServer;
  let sdk: RunningTasksServer;
  const ids: Record<string, string> = {};

  async function settle(taskId: string, statuses: string[]): Promise<void> {
    const deadline = Date.now() + 15_000;
    while (!statuses.includes(String((await postModern(sdk.url, 'tasks/get', { taskId })).body.result?.status))) {
      if (Date.now() > deadline) throw new Error(`task ${taskId} never reached ${statuses.join('/')}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  beforeAll(async () => {
    // A 1 ms poll hint keeps the polling protection out of the comparison (it only acts on polls < 0.5 ms apart).
    fast = await startTasksServer({ tools, dbPath, fastPath: true, limits: { pollIntervalMs: 1 } });
    sdk = await startTasksServer({ tools, dbPath, fastPath: false, limits: { pollIntervalMs: 1 } });
    const create = async (name: string, args: object, capabilities?: object) =>
      String((await postModern(sdk.url, 'tools/call', { name, arguments: args }, capabilities ? { capabilities } : {})).body.result?.taskId);
    ids.working = await create('slow_compute', { seconds: 60 });
    ids.completed = await create('slow_compute', { seconds: 0 });
    ids.toolError = await create('tool_error', {});
    ids.failed = await create('coded_error', {});
    ids.cancelled = await create('slow_compute', { seconds: 60 });
    ids.input = await create('confirm_delete', { filename: 'x' }, ELICITATION);
    await postModern(sdk.url, 'tasks/cancel', { taskId: ids.cancelled });
    await settle(ids.completed, ['completed']);
    await settle(ids.toolError, ['completed']);
    await settle(ids.failed, ['failed']);
    await settle(ids.input, ['input_required']);
  });
  afterAll(async () => {
    await postModern(sdk.url, 'tasks/cancel', { taskId: ids.working });
    await fast.close();
    await sdk.close();
    temp.remove();
  });

  it('v2 tasks/get for every status, an unknown id and a v1 id', async () => {
    for (const [name, taskId] of [...Object.entries(ids), ['unknown', 'AAAAAAAAAAAAAAAAAAAAAA']] as Array<[string, string]>) {
      const [viaFast, viaSdk] = [await postModern(fast.url, 'tasks/get', { taskId }, { id: `g-${name}` }), await postModern(sdk.url, 'tasks/get', { taskId }, { id: `g-${name}` })];
      expect(shape(viaFast), name).toEqual(shape(viaSdk));
    }
  });

  it('v2 task-creating tools/call', async () => {
    const [viaFast, viaSdk] = [
      await postModern(fast.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } }, { id: 7 }),
      await postModern(sdk.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } }, { id: 7 }),
    ];
    expect(created(viaFast)).toEqual(created(viaSdk));
    expect(viaFast.body.result?.resultType).toBe('task');
  });

  it('requests the fast path leaves to the SDK still get the SDK answer (header mismatch, no extension, bad arguments)', async () => {
    const cases: Array<[string, Record<string, unknown>, Parameters<typeof postModern>[3]]> = [
      ['tasks/get', { taskId: ids.completed as string }, { headers: { 'mcp-name': 'other' } }],
      ['tasks/get', { taskId: ids.completed as string }, { capabilities: {} }],
      ['tools/call', { name: 'slow_compute', arguments: { seconds: 'x' } }, {}],
      ['tools/call', { name: 'greet', arguments: { name: 'x' } }, {}],
    ];
    for (const [method, params, options] of cases) {
      const [viaFast, viaSdk] = [await postModern(fast.url, method, params, { ...options, id: 1 }), await postModern(sdk.url, method, params, { ...options, id: 1 })];
      expect(shape(viaFast), `${method} ${JSON.stringify(params)}`).toEqual(shape(viaSdk));
    }
  });

  it('v1 tasks/get, terminal tasks/result and task-creating tools/call in a 2025-11-25 session', async () => {
    const [fastSession, sdkSession] = [await RawLegacySession.open(fast.url), await RawLegacySession.open(sdk.url)];
    let nextId = 1000;
    const v1 = async (method: string, params: Record<string, unknown>) => {
      const id = (nextId += 1);
      return [await fastSession.post({ jsonrpc: '2.0', id, method, params }), await sdkSession.post({ jsonrpc: '2.0', id, method, params })] as const;
    };
    const make = async (name: string, args: object) => String(((await sdkSession.request('tools/call', { name, arguments: args, task: {} })).body.result?.task as { taskId: string }).taskId);
    const v1Ids = { completed: await make('slow_compute', { seconds: 0 }), toolError: await make('tool_error', {}), failed: await make('coded_error', {}), cancelled: await make('slow_compute', { seconds: 60 }) };
    await sdkSession.request('tasks/cancel', { taskId: v1Ids.cancelled });
    for (const taskId of Object.values(v1Ids)) {
      await expect.poll(async () => (await sdkSession.request('tasks/get', { taskId })).body.result?.status, { timeout: 15_000 }).toBeOneOf(['completed', 'failed', 'cancelled']);
    }
    for (const [name, taskId] of [...Object.entries(v1Ids), ['unknown', 'AAAAAAAAAAAAAAAAAAAAAA'], ['v2 task', ids.completed as string]] as Array<[string, string]>) {
      for (const method of ['tasks/get', 'tasks/result']) {
        const [viaFast, viaSdk] = await v1(method, { taskId });
        expect(shape(viaFast), `${method} ${name}`).toEqual(shape(viaSdk));
        expect(viaFast.headers.get('mcp-session-id')).toBe(fastSession.sessionId);
      }
    }
    const [viaFast, viaSdk] = await v1('tools/call', { name: 'slow_compute', arguments: { seconds: 0 }, task: { ttl: 60_000 } });
    expect(created(viaFast)).toEqual(created(viaSdk));
  });
});
