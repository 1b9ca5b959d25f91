/**
 * Issue 10 §2 over real HTTP, both generations: per-owner quotas (`maxActiveTasksPerOwner`, `maxCreatesPerMinute`)
 * answer `-31001` with a stable `data.reason` and `data.retryAfterMs`, nothing is created (asserted from the rows),
 * and they hold across two API instances on one store (counted in the store, not per process); the owner next door
 * is unaffected. Argument size and depth limits answer `-32602` naming the limit, nothing created. Each refusal has
 * its allowed twin (negative control).
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { TokenFileAuthenticator } from '../../src/auth/token-file.js';
import type { TasksServerLimits } from '../../src/core/limits.js';
import { ownerKeyOf } from '../../src/core/owner.js';
import { ErrorCode } from '../../src/protocol/constants.js';
import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import { gatedTools, Gates } from '../helpers/official-clients.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { postModern, readJsonRpc, type WireResponse } from '../helpers/wire.js';

const ISSUER = 'https://issuer.example';
const tokenA = `a-${randomUUID()}`;
const tokenB = `b-${randomUUID()}`;
const ALICE = ownerKeyOf({ issuer: ISSUER, subject: 'alice', tenant: 'acme' });
const V1 = '2025-11-25';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(limits: Partial<TasksServerLimits>, dbPath?: string, gates = new Gates()): Promise<RunningTasksServer> {
  const auth = new TokenFileAuthenticator({
    tokens: [
      { token: tokenA, issuer: ISSUER, subject: 'alice', tenant: 'acme' },
      { token: tokenB, issuer: ISSUER, subject: 'bob', tenant: 'acme' },
    ],
  });
  const running = await startTasksServer({
    tools: [...conformanceFixtureTools(), ...gatedTools(gates)],
    auth,
    limits: { pollIntervalMs: 50, ...limits },
    ...(dbPath ? { dbPath } : {}),
  });
  cleanups.push(() => running.close());
  return running;
}

/** Rows of an owner in the store, both generations. */
async function rowsOf(running: RunningTasksServer, ownerKey: string): Promise<number> {
  const v1 = await running.store.list({ ownerKey, generation: 'v1' }, { afterSeq: 0, limit: 1000 });
  const v2 = await running.store.list({ ownerKey, generation: 'v2' }, { afterSeq: 0, limit: 1000 });
  return v1.length + v2.length;
}

/** A task that works until its gate opens (never ends by itself). */
const createV2 = (url: string, token: string, args: Record<string, unknown> = { gate: randomUUID() }) =>
  postModern(url, 'tools/call', { name: 'gated', arguments: args }, { token });

async function v1Session(url: string, token: string): Promise<(method: string, params: Record<string, unknown>) => Promise<WireResponse>> {
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': V1,
    authorization: `Bearer ${token}`,
  };
  const init = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: V1, capabilities: {}, clientInfo: { name: 'quota-e2e', version: '1' } },
    }),
  });
  const sessionId = init.headers.get('mcp-session-id') as string;
  await init.text();
  const withSession = { ...headers, 'mcp-session-id': sessionId };
  await fetch(url, { method: 'POST', headers: withSession, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  let id = 1;
  return async (method, params) =>
    readJsonRpc(await fetch(url, { method: 'POST', headers: withSession, body: JSON.stringify({ jsonrpc: '2.0', id: id++, method, params }) }));
}

describe('issue 10 §2 quotas (-31001) across two instances on one store', () => {
  it('maxActiveTasksPerOwner: the third active task of alice is refused on either instance with reason active_tasks and retryAfterMs, nothing created; bob is unaffected; a finished task frees the slot', async () => {
    const gates = new Gates();
    const dbPath = join(makeTempDir().dir, 'tasks.db');
    const one = await start({ maxActiveTasksPerOwner: 2 }, dbPath, gates);
    const two = await start({ maxActiveTasksPerOwner: 2 }, dbPath, gates);
    const first = randomUUID();
    expect((await createV2(one.url, tokenA, { gate: first })).body.result?.resultType).toBe('task');
    expect((await createV2(two.url, tokenA)).body.result?.resultType).toBe('task');
    expect(await rowsOf(one, ALICE)).toBe(2);
    for (const running of [one, two]) {
      const refused = await createV2(running.url, tokenA);
      expect(refused.status).toBe(200);
      expect(refused.body.error).toMatchObject({
        code: ErrorCode.QuotaExceeded,
        message: expect.stringMatching(/at most 2 active tasks per owner \(--max-active-tasks-per-owner\)/),
        data: { reason: 'active_tasks', limit: 2, retryAfterMs: 50 },
      });
    }
    // v1 generation, the same owner, the same quota (counted over both generations).
    const v1 = await v1Session(two.url, tokenA);
    const v1Refused = await v1('tools/call', { name: 'gated', arguments: { gate: randomUUID() }, task: { ttl: 60_000 } });
    expect(v1Refused.body.error).toMatchObject({ code: -31001, data: { reason: 'active_tasks' } });
    expect(await rowsOf(one, ALICE)).toBe(2);
    // Negative controls: bob has his own quota; a task that ends frees alice's slot.
    expect((await createV2(one.url, tokenB)).body.result?.resultType).toBe('task');
    gates.open(first);
    const deadline = Date.now() + 10_000;
    let again: WireResponse;
    do {
      await new Promise((resolve) => setTimeout(resolve, 50));
      again = await createV2(two.url, tokenA);
    } while (again.body.error && Date.now() < deadline);
    expect(again.body.result?.resultType).toBe('task');
    expect(await rowsOf(one, ALICE)).toBe(3);
  });

  it('maxCreatesPerMinute: the fourth create within a minute is refused with reason create_rate and retryAfterMs ≤ 60 s on either instance, both generations; nothing created', async () => {
    const dbPath = join(makeTempDir().dir, 'tasks.db');
    const one = await start({ maxCreatesPerMinute: 3 }, dbPath);
    const two = await start({ maxCreatesPerMinute: 3 }, dbPath);
    const slow = (url: string, token: string) => postModern(url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } }, { token });
    expect((await slow(one.url, tokenA)).body.result?.resultType).toBe('task');
    expect((await slow(two.url, tokenA)).body.result?.resultType).toBe('task');
    const v1 = await v1Session(one.url, tokenA);
    expect((await v1('tools/call', { name: 'slow_compute', arguments: { seconds: 0 }, task: {} })).body.result?.task).toBeDefined();
    for (const refused of [await slow(two.url, tokenA), await v1('tools/call', { name: 'slow_compute', arguments: { seconds: 0 }, task: {} })]) {
      expect(refused.body.error).toMatchObject({ code: -31001, data: { reason: 'create_rate', limit: 3 } });
      const { retryAfterMs } = (refused.body.error as { data: { retryAfterMs: number } }).data;
      expect(retryAfterMs).toBeGreaterThan(0);
      expect(retryAfterMs).toBeLessThanOrEqual(60_000);
    }
    expect(await rowsOf(one, ALICE)).toBe(3);
    expect((await slow(one.url, tokenB)).body.result?.resultType).toBe('task');
  });
});

describe('issue 10 §2 argument limits (-32602 naming the limit)', () => {
  it('arguments larger than maxArgumentBytes or deeper than maxArgumentDepth are refused on both generations, nothing created; within the limits they are accepted', async () => {
    const running = await start({ maxArgumentBytes: 1000, maxArgumentDepth: 4 });
    const big = { gate: 'x'.repeat(1000) };
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 4; i += 1) deep = { nested: deep };
    const v1 = await v1Session(running.url, tokenA);
    const cases: Array<[string, Record<string, unknown>, RegExp, string]> = [
      ['size', big, /arguments are 1\d{3} bytes of JSON, more than maxArgumentBytes \(1000 bytes, --max-argument-bytes\)/, 'argument_size'],
      ['depth', { gate: 'g', extra: deep }, /arguments nest deeper than maxArgumentDepth \(4 levels, --max-argument-depth\)/, 'argument_depth'],
    ];
    for (const [what, args, message, reason] of cases) {
      const v2 = await postModern(running.url, 'tools/call', { name: 'gated', arguments: args }, { token: tokenA });
      expect(v2.body.error, `v2 ${what}`).toMatchObject({ code: -32602, message: expect.stringMatching(message), data: { reason } });
      const legacy = await v1('tools/call', { name: 'gated', arguments: args, task: {} });
      expect(legacy.body.error, `v1 ${what}`).toMatchObject({ code: -32602, message: expect.stringMatching(message), data: { reason } });
    }
    expect(await rowsOf(running, ALICE)).toBe(0);
    // Negative control: just within both limits.
    let atLimit: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 2; i += 1) atLimit = { nested: atLimit };
    const gates = { gate: 'y'.repeat(900), extra: atLimit };
    expect((await postModern(running.url, 'tools/call', { name: 'gated', arguments: gates }, { token: tokenA })).body.result?.resultType).toBe('task');
    expect(await rowsOf(running, ALICE)).toBe(1);
  });
});
