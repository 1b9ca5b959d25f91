import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';

import { TasksError } from '../../src/core/errors.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import { type BothPaths, startBothPaths } from '../helpers/both-paths.js';
import { type HttpAnswer, sendHttp } from '../helpers/raw-http.js';
import { RawLegacySession } from '../helpers/sse.js';
import type { RunningTasksServer } from '../helpers/tasks-server.js';
import { modernMeta, postModern, type WireResponse } from '../helpers/wire.js';

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

/** The header variations of the matrix, one header at a time off a valid request (`undefined`: header absent). */
const CONTENT_TYPES = [
  'application/json',
  // Accepted like the SDK: parameters (any charset: JSON is UTF-8, RFC 8259 §8.1), case, a sloppy parameter section.
  'application/json; charset=utf-8',
  'Application/JSON;Charset="UTF-8"',
  'application/json;',
  'application/json; charset=latin1',
  // Refused (HTTP 415): the CORS-safelisted types, none, and look-alikes a substring match would let through.
  'text/plain',
  'text/plain;charset=UTF-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=----fuzz',
  undefined,
  '',
  'text/plain; a=application/json',
  'application/json, text/plain',
  'application/jsonx',
  'application/vnd.api+json',
  '*/*',
];
const ACCEPTS = [
  'application/json, text/event-stream',
  'text/event-stream, application/json;q=0.5',
  undefined,
  '*/*',
  'application/json',
  'text/event-stream',
  'text/html',
];
const V2_VERSIONS = ['2026-07-28', undefined, '2025-11-25', '2099-01-01', '', '2026-07-28, 2026-07-28'];
const V1_VERSIONS = ['2025-11-25', undefined, '2026-07-28', '2025-06-18', '2099-01-01', ''];
/** `own`: the session opened on the server the request goes to; `other`: the other server's session. */
const V2_SESSIONS = [undefined, 'own', 'no-such-session', ''];
const V1_SESSIONS = ['own', 'other', 'no-such-session', '', undefined];

/** An answer reduced to what both paths must agree on: status, media type, the JSON-RPC message; ids and times by type. */
function rawShape(answer: HttpAnswer): unknown {
  const message = JSON.parse(JSON.stringify(answer.message ?? null), (key, value) =>
    ['taskId', 'createdAt', 'lastUpdatedAt'].includes(key) ? typeof value : value,
  );
  return { status: answer.status, type: answer.headers['content-type'], session: answer.headers['mcp-session-id'] === undefined ? 'none' : 'set', message };
}

describe('fast path answers exactly like the SDK path', () => {
  let both: BothPaths;
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
    both = await startBothPaths({ tools, limits: { pollIntervalMs: 1 } });
    ({ fast, sdk } = both);
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
    await both.close();
  });

  it('v2 tasks/get for every status, an unknown id and a v1 id', async () => {
    for (const [name, taskId] of [...Object.entries(ids), ['unknown', 'AAAAAAAAAAAAAAAAAAAAAA']] as Array<[string, string]>) {
      const [viaFast, viaSdk] = [
        await postModern(fast.url, 'tasks/get', { taskId }, { id: `g-${name}` }),
        await postModern(sdk.url, 'tasks/get', { taskId }, { id: `g-${name}` }),
      ];
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
      const [viaFast, viaSdk] = [
        await postModern(fast.url, method, params, { ...options, id: 1 }),
        await postModern(sdk.url, method, params, { ...options, id: 1 }),
      ];
      expect(shape(viaFast), `${method} ${JSON.stringify(params)}`).toEqual(shape(viaSdk));
    }
  });

  it('B23/B25/B26 header matrix (Content-Type, Accept, MCP-Protocol-Version, Mcp-Session-Id) on both generations: same status, media type and JSON-RPC answer on both paths; a refused tools/call creates nothing, an accepted one exactly one task', async () => {
    const [fastSession, sdkSession] = [await RawLegacySession.open(fast.url), await RawLegacySession.open(sdk.url)];
    const port = (server: RunningTasksServer) => Number(new URL(server.url).port);
    const v1Task = String(
      ((await sdkSession.request('tools/call', { name: 'slow_compute', arguments: { seconds: 0 }, task: {} })).body.result?.task as { taskId: string }).taskId,
    );
    await expect.poll(async () => (await sdkSession.request('tasks/get', { taskId: v1Task })).body.result?.status, { timeout: 15_000 }).toBe('completed');
    type Variation = { header: string; value: string | undefined };
    const variations = (generation: 'v1' | 'v2'): Variation[] => [
      ...CONTENT_TYPES.map((value) => ({ header: 'content-type', value })),
      ...ACCEPTS.map((value) => ({ header: 'accept', value })),
      ...(generation === 'v2' ? V2_VERSIONS : V1_VERSIONS).map((value) => ({ header: 'mcp-protocol-version', value })),
      ...(generation === 'v2' ? V2_SESSIONS : V1_SESSIONS).map((value) => ({ header: 'mcp-session-id', value })),
    ];
    const labels: Array<{ label: string; created: boolean }> = [];
    let next = 0;
    /** One request to `server` with `variation` applied; `label` marks a tools/call so the store can be asked whether it ran. */
    const send = async (server: RunningTasksServer, generation: 'v1' | 'v2', method: 'tasks/get' | 'tools/call', variation: Variation, id: number) => {
      const own = server === fast ? fastSession : sdkSession;
      const label = `matrix-${(next += 1)}`;
      const params =
        method === 'tasks/get'
          ? { taskId: generation === 'v2' ? ids.completed : v1Task }
          : { name: 'slow_compute', arguments: { seconds: 0, label }, ...(generation === 'v1' ? { task: {} } : {}) };
      const headers: Record<string, string | undefined> =
        generation === 'v2'
          ? { 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, 'mcp-name': method === 'tasks/get' ? String(params.taskId) : 'slow_compute' }
          : { 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': own.sessionId };
      Object.assign(headers, { 'content-type': 'application/json', accept: 'application/json, text/event-stream' });
      const session = { own: own.sessionId, other: (server === fast ? sdkSession : fastSession).sessionId }[variation.value as 'own' | 'other'];
      headers[variation.header] = variation.header === 'mcp-session-id' && session !== undefined ? session : variation.value;
      const body = JSON.stringify({ jsonrpc: '2.0', id, method, params: generation === 'v2' ? { ...params, _meta: modernMeta() } : params });
      const answer = await sendHttp(
        port(server),
        {
          method: 'POST',
          path: '/mcp',
          headers: Object.fromEntries(Object.entries(headers).filter((entry): entry is [string, string] => entry[1] !== undefined)),
          body,
        },
        15_000,
      );
      if (method === 'tools/call') labels.push({ label, created: answer.status === 200 && answer.message?.result !== undefined });
      return answer;
    };
    const refusedTypes = new Set<number>();
    for (const generation of ['v2', 'v1'] as const) {
      for (const method of ['tasks/get', 'tools/call'] as const) {
        for (const variation of variations(generation)) {
          const id = (next += 1);
          const [viaFast, viaSdk] = [await send(fast, generation, method, variation, id), await send(sdk, generation, method, variation, id)];
          const what = `${generation} ${method} ${variation.header}: ${String(variation.value)}`;
          expect(rawShape(viaFast), what).toEqual(rawShape(viaSdk));
          expect(viaFast.status, what).toBeLessThan(500);
          if (variation.header === 'content-type') {
            const accepted = CONTENT_TYPES.indexOf(variation.value) < CONTENT_TYPES.indexOf('text/plain');
            expect(accepted ? viaFast.status : [viaFast.status, viaFast.message?.error?.code], what).toEqual(accepted ? 200 : [415, -32000]);
            if (!accepted) refusedTypes.add(viaFast.status);
          }
        }
      }
    }
    expect([...refusedTypes]).toEqual([415]);
    // Executed exactly when answered: one task per accepted tools/call, none for a refused one.
    for (const { label, created } of labels) expect(both.tasksLabelled(label), label).toBe(created ? 1 : 0);
    expect(labels.filter((entry) => entry.created).length).toBeGreaterThan(10);
    expect(labels.filter((entry) => !entry.created).length).toBeGreaterThan(20);
  });

  it('v1 tasks/get, terminal tasks/result and task-creating tools/call in a 2025-11-25 session', async () => {
    const [fastSession, sdkSession] = [await RawLegacySession.open(fast.url), await RawLegacySession.open(sdk.url)];
    let nextId = 1000;
    const v1 = async (method: string, params: Record<string, unknown>) => {
      const id = (nextId += 1);
      return [await fastSession.post({ jsonrpc: '2.0', id, method, params }), await sdkSession.post({ jsonrpc: '2.0', id, method, params })] as const;
    };
    const make = async (name: string, args: object) =>
      String(((await sdkSession.request('tools/call', { name, arguments: args, task: {} })).body.result?.task as { taskId: string }).taskId);
    const v1Ids = {
      completed: await make('slow_compute', { seconds: 0 }),
      toolError: await make('tool_error', {}),
      failed: await make('coded_error', {}),
      cancelled: await make('slow_compute', { seconds: 60 }),
    };
    await sdkSession.request('tasks/cancel', { taskId: v1Ids.cancelled });
    for (const taskId of Object.values(v1Ids)) {
      await expect
        .poll(async () => (await sdkSession.request('tasks/get', { taskId })).body.result?.status, { timeout: 15_000 })
        .toBeOneOf(['completed', 'failed', 'cancelled']);
    }
    for (const [name, taskId] of [...Object.entries(v1Ids), ['unknown', 'AAAAAAAAAAAAAAAAAAAAAA'], ['v2 task', ids.completed as string]] as Array<
      [string, string]
    >) {
      for (const method of ['tasks/get', 'tasks/result']) {
        const [viaFast, viaSdk] = await v1(method, { taskId });
        expect(shape(viaFast), `${method} ${name}`).toEqual(shape(viaSdk));
        expect(viaFast.headers.get('mcp-session-id')).toBe(fastSession.sessionId);
      }
    }
    const [viaFast, viaSdk] = await v1('tools/call', { name: 'slow_compute', arguments: { seconds: 0 }, task: { ttl: 60_000 } });
    expect(created(viaFast)).toEqual(created(viaSdk));
  });

  it('R24: a v1 tasks/result that blocks on a running task whose tool never asks for input is answered by the fast path, as the SDK path answers it', async () => {
    const [fastSession, sdkSession] = [await RawLegacySession.open(fast.url), await RawLegacySession.open(sdk.url)];
    const make = async () =>
      String(
        ((await sdkSession.request('tools/call', { name: 'slow_compute', arguments: { seconds: 1 }, task: {} })).body.result?.task as { taskId: string })
          .taskId,
      );
    const [onFast, onSdk] = [await make(), await make()];
    // The SDK path reads the task's open questions on every change while it waits (R29), then its outcome; the fast
    // path has no questions to send and reads only the outcome.
    const fastDetails = vi.spyOn(fast.server.service.tasks, 'details');
    const sdkDetails = vi.spyOn(sdk.server.service.tasks, 'details');
    try {
      const [viaFast, viaSdk] = await Promise.all([
        fastSession.post({ jsonrpc: '2.0', id: 7, method: 'tasks/result', params: { taskId: onFast } }),
        sdkSession.post({ jsonrpc: '2.0', id: 7, method: 'tasks/result', params: { taskId: onSdk } }),
      ]);
      expect(created(viaFast)).toEqual(created(viaSdk));
      expect(viaFast.messages.at(-1)).toMatchObject({ id: 7, result: { content: [{ type: 'text', text: 'Computed result after 1s' }] } });
      expect(viaFast.headers.get('mcp-session-id')).toBe(fastSession.sessionId);
      expect(fastDetails).toHaveBeenCalledTimes(1);
      // Negative control: the same request on the SDK path.
      expect(sdkDetails.mock.calls.length).toBeGreaterThan(1);
    } finally {
      vi.restoreAllMocks();
    }
  });
});
