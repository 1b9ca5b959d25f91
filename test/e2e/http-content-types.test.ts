/**
 * Issue 23 item 1: every POST route refuses a request body that is not JSON with HTTP 415 and executes nothing. A
 * cross-site page can POST `text/plain`, a form or `multipart/form-data` without a CORS preflight, so a route that
 * ran such a request ran work nobody asked for. Covered here: the MCP endpoint on both generations and both paths
 * (two servers on one database, with and without the fast path), the 2025-11-25 elicitation reply, the admin API
 * (`/admin/kill-switch`); the dashboard's actions are in `test/dashboard/dashboard-http.test.ts`. Each refusal stands
 * next to the same request as JSON, which must work, and the store is read afterwards: nothing created, cancelled,
 * answered or listed. The order of the checks follows the SDK: 401 before 415 (no task lookup unauthenticated),
 * 415 before 413 (a body of the wrong type is not read).
 */
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TokenFileAuthenticator } from '../../src/auth/token-file.js';
import { silentLogger } from '../../src/core/logger.js';
import { ownerKeyOf } from '../../src/core/owner.js';
import { createAdminApi } from '../../src/ops/admin-api.js';
import { KillSwitchCache } from '../../src/ops/rollout/kill-switch.js';
import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import { type BothPaths, startBothPaths } from '../helpers/both-paths.js';
import { type HttpAnswer, sendHttp, sendRawHttp } from '../helpers/raw-http.js';
import { RawLegacySession } from '../helpers/sse.js';
import type { RunningTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { modernMeta } from '../helpers/wire.js';

const principal = { issuer: 'https://issuer.test', subject: 'alice', tenant: 'acme' };
const TOKEN = 'alice-token-0123456789abcdef';
const ADMIN = 'admin-token-0123456789abcdef';
/** The types a cross-site page sends without a preflight, none at all, and a look-alike a substring match accepts. */
const REFUSED = [
  'text/plain',
  'text/plain;charset=UTF-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=----x',
  undefined,
  'text/plain; a=application/json',
];
const ELICITING = { elicitation: { form: {} } };

/** POST `body` to `url` with exactly these headers (`undefined` values are left out). */
function post(url: string, body: string, headers: Record<string, string | undefined>, method = 'POST'): Promise<HttpAnswer> {
  const target = new URL(url);
  const sent = Object.fromEntries(Object.entries(headers).filter((entry): entry is [string, string] => entry[1] !== undefined));
  return sendHttp(Number(target.port), { method, path: target.pathname + target.search, headers: sent, body }, 15_000);
}

/** A 2026-07-28 request: its body and SEP-2243 headers, with `contentType` (absent when `undefined`). */
function v2(method: string, params: Record<string, unknown>, contentType: string | undefined, name?: string): [string, Record<string, string | undefined>] {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: modernMeta() } });
  return [
    body,
    {
      'content-type': contentType,
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${TOKEN}`,
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      'mcp-name': name,
    },
  ];
}

describe('issue 23 item 1: a POST whose body is not JSON gets HTTP 415 and runs nothing', () => {
  const temp = makeTempDir('mcp-tasks-content-types-');
  let both: BothPaths;
  let fast: RunningTasksServer;
  let sdk: RunningTasksServer;

  beforeAll(async () => {
    const tokenFile = join(temp.dir, 'tokens.json');
    writeFileSync(
      tokenFile,
      JSON.stringify({
        tokens: [
          { token: TOKEN, ...principal },
          { token: ADMIN, ...principal, subject: 'ops', scopes: ['admin:write'] },
        ],
      }),
    );
    both = await startBothPaths({ tools: conformanceFixtureTools(), auth: TokenFileAuthenticator.fromFile(tokenFile) });
    ({ fast, sdk } = both);
  });
  afterAll(async () => {
    await both.close();
    temp.remove();
  });

  for (const path of ['fast', 'sdk'] as const) {
    it(`2026-07-28 (${path} path): tools/call, tasks/cancel and tasks/get as text/plain, a form, multipart or untyped → 415 -32000; nothing created or cancelled; the same requests as JSON work`, async () => {
      const url = (path === 'fast' ? fast : sdk).url;
      const create = (label: string, type: string | undefined) =>
        post(url, ...v2('tools/call', { name: 'slow_compute', arguments: { seconds: 60, label } }, type, 'slow_compute'));
      const working = (await create(`v2-${path}-working`, 'application/json')).message?.result?.taskId as string;
      expect(both.statusOf(working)).toBe('working');
      for (const type of REFUSED) {
        const label = `v2-${path}-${String(type)}`;
        for (const answer of [
          await create(label, type),
          await post(url, ...v2('tasks/cancel', { taskId: working }, type, working)),
          await post(url, ...v2('tasks/get', { taskId: working }, type, working)),
        ]) {
          expect([answer.status, answer.message?.error?.code, answer.message?.result], String(type)).toEqual([415, -32000, undefined]);
          expect(answer.message?.error?.message).toBe('Unsupported Media Type: Content-Type must be application/json');
        }
        expect(both.tasksLabelled(label), label).toBe(0);
      }
      expect(both.statusOf(working)).toBe('working');
      // The same requests as JSON (any parameters, any case) are served.
      expect((await create(`v2-${path}-json`, 'Application/JSON; charset=utf-8')).message?.result?.resultType).toBe('task');
      expect(both.tasksLabelled(`v2-${path}-json`)).toBe(1);
      expect((await post(url, ...v2('tasks/cancel', { taskId: working }, 'application/json', working))).message?.result).toBeDefined();
      await expect.poll(() => both.statusOf(working)).toBe('cancelled');
    });

    it(`2025-11-25 (${path} path): tools/call, tasks/cancel and tasks/list in a session as a non-JSON type → 415; nothing created, cancelled or listed`, async () => {
      const url = (path === 'fast' ? fast : sdk).url;
      const session = await RawLegacySession.open(url, { token: TOKEN });
      const inSession = (message: object, type: string | undefined) =>
        post(url, JSON.stringify(message), { ...session.headers(), 'content-type': type, accept: 'application/json, text/event-stream' });
      const create = (label: string, type: string | undefined) =>
        inSession({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 60, label }, task: {} } }, type);
      const working = ((await create(`v1-${path}-working`, 'application/json')).message?.result?.task as { taskId: string }).taskId;
      for (const type of REFUSED) {
        const label = `v1-${path}-${String(type)}`;
        const answers = [
          await create(label, type),
          await inSession({ jsonrpc: '2.0', id: 2, method: 'tasks/cancel', params: { taskId: working } }, type),
          await inSession({ jsonrpc: '2.0', id: 3, method: 'tasks/list', params: {} }, type),
        ];
        for (const answer of answers)
          expect([answer.status, answer.message?.error?.code, answer.message?.result], String(type)).toEqual([415, -32000, undefined]);
        expect(answers.some((answer) => answer.text.includes(working))).toBe(false);
        expect(both.tasksLabelled(label), label).toBe(0);
      }
      expect(both.statusOf(working)).toBe('working');
      const listed = await inSession({ jsonrpc: '2.0', id: 4, method: 'tasks/list', params: {} }, 'application/json;charset=UTF-8');
      expect(JSON.stringify(listed.message?.result?.tasks)).toContain(working);
      await inSession({ jsonrpc: '2.0', id: 5, method: 'tasks/cancel', params: { taskId: working } }, 'application/json');
    });
  }

  it('R29 a 2025-11-25 elicitation reply posted as text/plain or a form is refused (415) and answers nothing; the same reply as JSON completes the task', async () => {
    const session = await RawLegacySession.open(fast.url, { token: TOKEN, capabilities: ELICITING });
    const created = await session.request('tools/call', { name: 'confirm_delete', arguments: { filename: 'kept.txt' }, task: {} });
    const taskId = (created.body.result?.task as { taskId: string }).taskId;
    await expect.poll(() => both.statusOf(taskId), { timeout: 15_000 }).toBe('input_required');
    const reply = JSON.stringify({ jsonrpc: '2.0', id: `mcp-tasks-input/${taskId}/input-1`, result: { action: 'accept', content: { confirm: true } } });
    for (const url of [fast.url, sdk.url]) {
      for (const type of REFUSED) {
        const answer = await post(url, reply, { ...session.headers(), 'content-type': type, accept: 'application/json, text/event-stream' });
        expect([answer.status, answer.message?.error?.code], String(type)).toEqual([415, -32000]);
      }
    }
    // Still waiting for its answer: the refused replies reached nothing.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(both.statusOf(taskId)).toBe('input_required');
    const accepted = await post(fast.url, reply, { ...session.headers(), 'content-type': 'application/json', accept: 'application/json, text/event-stream' });
    expect(accepted.status).toBe(202);
    await expect.poll(() => both.statusOf(taskId), { timeout: 15_000 }).toBe('completed');
  });

  it('order of the checks as in the SDK: 401 before 415 (no token, text/plain), 415 before 413 (an oversized text/plain body is not read), 413 for an oversized JSON body', async () => {
    const [body, headers] = v2('tools/call', { name: 'slow_compute', arguments: { seconds: 0, label: 'order' } }, 'text/plain', 'slow_compute');
    for (const url of [fast.url, sdk.url]) {
      const anonymous = await post(url, body, { ...headers, authorization: undefined });
      expect(anonymous.status).toBe(401);
      expect(String(anonymous.headers['www-authenticate'])).toMatch(/^Bearer/);
      const huge = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'slow_compute', arguments: { seconds: 0, label: 'order', pad: 'x'.repeat(4 * 1024 * 1024 + 10) }, _meta: modernMeta() },
      });
      expect([(await post(url, huge, headers)).status, (await post(url, huge, { ...headers, 'content-type': 'application/json' })).status]).toEqual([415, 413]);
    }
    expect(both.tasksLabelled('order')).toBe(0);
  });

  it('a client still sending a large text/plain body on a closing connection reads its 415, not a reset (the body is drained unparsed)', async () => {
    const port = Number(new URL(fast.url).port);
    const body = Buffer.alloc(3 * 1024 * 1024, 0x78);
    const head = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: text/plain\r\nAccept: application/json, text/event-stream\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const answer = await sendRawHttp(
        port,
        { pieces: [Buffer.from(head), body.subarray(0, 1024 * 1024), body.subarray(1024 * 1024)], pauseMs: 5, readAfterSending: true },
        15_000,
      );
      expect([answer.status, answer.message?.error?.code]).toEqual([415, -32000]);
    }
  });

  describe('the admin API', () => {
    let http: Server;
    let base: string;
    let killSwitch: KillSwitchCache;
    beforeAll(async () => {
      killSwitch = new KillSwitchCache(fast.store, silentLogger);
      const admin = createAdminApi({
        store: fast.store,
        killSwitch,
        tools: ['slow_compute'],
        defaultFallback: 'reject',
        authenticator: TokenFileAuthenticator.fromFile(join(temp.dir, 'tokens.json')),
        allowedHosts: null,
      });
      http = createServer((request, response) => void admin.handle(request, response));
      await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    });
    afterAll(async () => {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    });

    it('PUT /admin/kill-switch with a non-JSON type → 415 unsupported_media_type and the switch stays off (after the token check: none → 401); as JSON → on', async () => {
      const change = JSON.stringify({ tool: 'slow_compute', reason: 'content-type test' });
      const put = (type: string | undefined, token: string | null = ADMIN) =>
        post(`${base}/admin/kill-switch`, change, { 'content-type': type, authorization: token === null ? undefined : `Bearer ${token}` }, 'PUT');
      expect((await put('text/plain', null)).status).toBe(401);
      for (const type of REFUSED) {
        const answer = await put(type);
        expect(answer.status, String(type)).toBe(415);
        expect(JSON.parse(answer.text)).toMatchObject({ error: 'unsupported_media_type' });
      }
      expect(await fast.store.listKillSwitches()).toEqual([]);
      // A change whose body was lost — none at all, or cut short by the connection — changes nothing either.
      const empty = await post(`${base}/admin/kill-switch`, '', { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` }, 'PUT');
      expect([empty.status, JSON.parse(empty.text).error]).toEqual([400, 'invalid_request']);
      const port = Number(new URL(base).port);
      const cut = await sendRawHttp(
        port,
        {
          pieces: [
            Buffer.from(
              `PUT /admin/kill-switch HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nAuthorization: Bearer ${ADMIN}\r\nContent-Length: 100\r\n\r\n{"tool":`,
            ),
          ],
          halfClose: true,
        },
        15_000,
      );
      expect(cut.status).toBeLessThan(500);
      expect(await fast.store.listKillSwitches()).toEqual([]);
      expect((await put('application/json; charset=utf-8')).status).toBe(200);
      expect((await fast.store.listKillSwitches()).map((entry) => [entry.scope, entry.setBy])).toEqual([
        ['slow_compute', ownerKeyOf({ ...principal, subject: 'ops' })],
      ]);
      await fast.store.clearKillSwitch('slow_compute');
    });
  });
});
