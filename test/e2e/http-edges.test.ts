import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import { captureLogger } from '../helpers/capture-logger.js';
import { sendRawHttp } from '../helpers/raw-http.js';
import { RawLegacySession } from '../helpers/sse.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { modernMeta, postRaw, readJsonRpc } from '../helpers/wire.js';

describe('HTTP edges of the one endpoint', () => {
  let running: RunningTasksServer;
  beforeAll(async () => {
    running = await startTasksServer({
      tools: conformanceFixtureTools(),
      limits: { maxSessions: 2, maxTtlMs: 60_000, defaultTtlMs: 30_000, runtimeLimitMs: 30_000, minResultRetentionMs: 0 },
    });
  });
  afterAll(async () => {
    await running.close();
  });

  it('an empty POST body is a parse error (-32700, HTTP 400)', async () => {
    const response = await postRaw(running.url, '');
    expect(response.status).toBe(400);
    expect(response.body.error?.code).toBe(-32700);
  });

  it('a JSON-RPC response that answers nothing of ours, outside a session, is an invalid request (-32600)', async () => {
    const response = await postRaw(running.url, JSON.stringify({ jsonrpc: '2.0', id: 'x', result: {} }));
    expect(response.status).toBe(400);
    expect(response.body.error?.code).toBe(-32600);
  });

  it('PUT and OPTIONS get HTTP 405 with an Allow header', async () => {
    for (const method of ['PUT', 'OPTIONS']) {
      const response = await fetch(running.url, { method, headers: { 'content-type': 'application/json' }, body: method === 'PUT' ? '{}' : null });
      expect(response.status, method).toBe(405);
      expect(response.headers.get('allow')).toBe('GET, POST, DELETE');
      await response.text();
    }
  });

  it('a body just over 4 MiB is answered 413 (-32600) and the client reads it (the body is drained, not cut off)', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { pad: 'x'.repeat(4 * 1024 * 1024 + 100) } });
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const response = await readJsonRpc(await fetch(running.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body }));
      expect(response.status).toBe(413);
      expect(response.body.error?.code).toBe(-32600);
    }
  });

  it('a body cut short by the client (fewer bytes than its Content-Length, then the connection ends) runs nothing, answers no 5xx and is no server error in the log', async () => {
    const capture = captureLogger();
    const own = await startTasksServer({ tools: conformanceFixtureTools(), logger: capture.logger });
    try {
      const port = Number(new URL(own.url).port);
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'slow_compute', arguments: { seconds: 0 }, _meta: modernMeta() },
      });
      const head = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: slow_compute\r\nContent-Length: ${body.length + 20}\r\n\r\n`;
      for (const sent of [body, body.slice(0, 40)]) {
        const answer = await sendRawHttp(port, { pieces: [Buffer.from(head + sent)], halfClose: true }, 15_000);
        expect(answer.status).toBeLessThan(500);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await own.store.browse({ limit: 10 })).toEqual([]);
      expect(capture.lines.filter((line) => line.level === 'error' || line.level === 'warn')).toEqual([]);
    } finally {
      await own.close();
    }
  });

  it('R18 any integer ttl is accepted and clamped to the maximum, however large; a non-object task is -32602', async () => {
    const session = await RawLegacySession.open(running.url);
    for (const ttl of [Number.MAX_SAFE_INTEGER + 2, 1e300]) {
      const created = await session.request('tools/call', { name: 'slow_compute', arguments: { seconds: 0 }, task: { ttl } });
      expect((created.body.result?.task as { ttl: number }).ttl).toBe(60_000);
    }
    const bad = await session.request('tools/call', { name: 'slow_compute', arguments: { seconds: 0 }, task: 'x' });
    expect(bad.body.error?.code).toBe(-32602);
    const fractional = await session.request('tools/call', { name: 'slow_compute', arguments: { seconds: 0 }, task: { ttl: 1.5 } });
    expect(fractional.body.error?.code).toBe(-32602);
  });

  it('legacy sessions held in memory are capped: the least recently used one is closed locally and rebuilt from its store record on its next request', async () => {
    const first = await RawLegacySession.open(running.url);
    const second = await RawLegacySession.open(running.url);
    expect((await first.request('tools/list')).status).toBe(200);
    const third = await RawLegacySession.open(running.url);
    expect(running.server.http.legacySessions.size).toBeLessThanOrEqual(2);
    expect((await second.request('tools/list')).status).toBe(200);
    expect(running.server.http.legacySessions.size).toBeLessThanOrEqual(2);
    expect((await first.request('tools/list')).status).toBe(200);
    expect((await third.request('tools/list')).status).toBe(200);
  });
});
