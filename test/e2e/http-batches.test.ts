/**
 * Issue 23 item 2: a JSON-RPC batch (a JSON array body) is refused as a whole on both generations — HTTP 400,
 * `-32600`, one error with `id: null`, nothing in it executed, no answer per element. Before, a batch in a 2025-11-25
 * session went to the SDK transport and every element ran (a batched `tasks/cancel` cancelled).
 *
 * The rule: base B23 ("one message per POST"), and both schemas — `JSONRPCMessage` of 2025-11-25 and of 2026-07-28
 * is one request, notification or response, with no batch type (batches left MCP in 2025-06-18). That also holds
 * for a batch of responses: our own elicitation replies (R29) come one per POST from every client we know, so a
 * batch of them is refused too, and the reply is accepted alone (202). A lone notification still gets 202 with an
 * empty body (B23, C-BASE-09). Two servers on one database, with and without the fast path: the refusal is the
 * front door's, before either path.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import { type BothPaths, startBothPaths } from '../helpers/both-paths.js';
import { type HttpAnswer, sendHttp } from '../helpers/raw-http.js';
import { RawLegacySession } from '../helpers/sse.js';
import type { RunningTasksServer } from '../helpers/tasks-server.js';
import { modernMeta } from '../helpers/wire.js';

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const BATCH_REFUSED = {
  jsonrpc: '2.0',
  id: null,
  error: { code: -32600, message: 'Invalid request: JSON-RPC batches are not accepted; send one message per POST' },
};

function post(server: RunningTasksServer, body: unknown, headers: Record<string, string>): Promise<HttpAnswer> {
  return sendHttp(
    Number(new URL(server.url).port),
    { method: 'POST', path: '/mcp', headers: { ...JSON_HEADERS, ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) },
    15_000,
  );
}

/** The one answer a batch gets: HTTP 400, a JSON body holding exactly one error with id null, nothing per element. */
function expectRefusedAsAWhole(answer: HttpAnswer, what: string): void {
  expect([answer.status, answer.headers['content-type']], what).toEqual([400, 'application/json']);
  expect(JSON.parse(answer.text), what).toEqual(BATCH_REFUSED);
}

describe('issue 23 item 2: B23 a JSON-RPC batch is refused as a whole on both generations', () => {
  let both: BothPaths;
  let fast: RunningTasksServer;
  let sdk: RunningTasksServer;

  beforeAll(async () => {
    both = await startBothPaths({ tools: conformanceFixtureTools() });
    ({ fast, sdk } = both);
  });
  afterAll(() => both.close());

  for (const path of ['fast', 'sdk'] as const) {
    it(`2025-11-25 (${path} path): a batch of tools/call, tasks/cancel and tasks/list in a session → 400 -32600 as a whole; nothing created, cancelled or listed; each request alone works`, async () => {
      const server = path === 'fast' ? fast : sdk;
      const session = await RawLegacySession.open(server.url);
      const working = (
        (await session.request('tools/call', { name: 'slow_compute', arguments: { seconds: 60, label: `v1-${path}-working` }, task: {} })).body.result
          ?.task as { taskId: string }
      ).taskId;
      const label = `v1-${path}-batched`;
      const batch = [
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 0, label }, task: {} } },
        { jsonrpc: '2.0', id: 2, method: 'tasks/cancel', params: { taskId: working } },
        { jsonrpc: '2.0', id: 3, method: 'tasks/list', params: {} },
      ];
      const answer = await post(server, batch, session.headers());
      expectRefusedAsAWhole(answer, 'requests');
      expect(answer.text).not.toContain(working);
      // Batches of one, of notifications only, empty, and one carrying initialize outside a session: refused alike.
      expectRefusedAsAWhole(await post(server, [batch[1]], session.headers()), 'a batch of one');
      expectRefusedAsAWhole(
        await post(
          server,
          [
            { jsonrpc: '2.0', method: 'notifications/initialized' },
            { jsonrpc: '2.0', method: 'notifications/roots/list_changed' },
          ],
          session.headers(),
        ),
        'notifications',
      );
      expectRefusedAsAWhole(await post(server, [], session.headers()), 'empty');
      expectRefusedAsAWhole(
        await post(
          server,
          [
            {
              jsonrpc: '2.0',
              id: 0,
              method: 'initialize',
              params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'batch', version: '0' } },
            },
          ],
          {},
        ),
        'initialize',
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect([both.tasksLabelled(label), both.statusOf(working)]).toEqual([0, 'working']);
      // The same messages one per POST are served; a lone notification gets 202 and no body.
      expect((await session.post(batch[0])).body.result?.task).toBeDefined();
      expect(both.tasksLabelled(label)).toBe(1);
      expect((await session.post(batch[1])).body.result?.status).toBe('cancelled');
      const notification = await post(server, { jsonrpc: '2.0', method: 'notifications/roots/list_changed' }, session.headers());
      expect([notification.status, notification.text]).toEqual([202, '']);
    });

    it(`2026-07-28 (${path} path): a batch of tools/call, or of notifications → 400 -32600 as a whole; nothing created; a lone notification → 202 without a body`, async () => {
      const server = path === 'fast' ? fast : sdk;
      const label = `v2-${path}-batched`;
      const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 0, label }, _meta: modernMeta() } };
      const headers = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'slow_compute' };
      expectRefusedAsAWhole(await post(server, [call], headers), 'a batch of one');
      expectRefusedAsAWhole(await post(server, [call, { ...call, id: 2 }], headers), 'two calls');
      const note = { jsonrpc: '2.0', method: 'notifications/x-batch', params: { _meta: modernMeta() } };
      const noteHeaders = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'notifications/x-batch' };
      expectRefusedAsAWhole(await post(server, [note, note], noteHeaders), 'notifications');
      expect(both.tasksLabelled(label)).toBe(0);
      const alone = await post(server, note, noteHeaders);
      expect([alone.status, alone.text]).toEqual([202, '']);
      expect((await post(server, call, headers)).message?.result?.resultType).toBe('task');
      expect(both.tasksLabelled(label)).toBe(1);
    });
  }

  it('R29 a batch of replies to our own elicitation requests → 400 -32600 and answers nothing; each reply alone → 202 and the task completes', async () => {
    const session = await RawLegacySession.open(fast.url, { capabilities: { elicitation: { form: {} } } });
    const created = await session.request('tools/call', { name: 'multi_input', arguments: {}, task: {} });
    const taskId = (created.body.result?.task as { taskId: string }).taskId;
    await expect.poll(() => both.statusOf(taskId), { timeout: 15_000 }).toBe('input_required');
    const replies = ['input-1', 'input-2'].map((key) => ({
      jsonrpc: '2.0',
      id: `mcp-tasks-input/${taskId}/${key}`,
      result: { action: 'accept', content: { confirm: true } },
    }));
    for (const server of [fast, sdk]) {
      expectRefusedAsAWhole(await post(server, replies, session.headers()), 'replies');
      expectRefusedAsAWhole(await post(server, [replies[0]], session.headers()), 'one reply in a batch');
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(both.statusOf(taskId)).toBe('input_required');
    for (const reply of replies) expect((await post(fast, reply, session.headers())).status).toBe(202);
    await expect.poll(() => both.statusOf(taskId), { timeout: 15_000 }).toBe('completed');
  });
});
