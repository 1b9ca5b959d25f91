/**
 * Issue 23 §5: no read of a large result costs memory in proportion to the result, on any path. Over real HTTP with
 * a real SQLite file, a result of about 3 MiB (above the SDK path's 1 MiB bound):
 * - the HTTP fast path streams it — the first bytes of the answer reach the client while the store still holds back
 *   the second chunk — also when the request carries an extra `_meta` key, the one key that used to send it to the
 *   SDK path, which buffered it;
 * - the SDK path (stdio, and HTTP requests the fast path does not take) refuses the whole read with `-31004`,
 *   `data.reason: "read_in_chunks"`, naming the chunk resources; reading those (base64 blobs) gives back the result
 *   byte for byte, on both generations and on both paths; a chunk that does not exist, a malformed chunk URI and
 *   another owner's chunk all get the one `-32602` "Resource not found".
 * Memory figures are left to `npm run bench:results`; this asserts the behaviour (streamed or refused, exact bytes).
 */
import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { TokenFileAuthenticator } from '../../src/auth/token-file.js';
import type { TaskStore } from '../../src/core/store.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { ErrorCode } from '../../src/protocol/constants.js';
import { RESULT_READ_CHUNK_BYTES, resultChunkUri, resultResourceUri } from '../../src/protocol/result-uri.js';
import { MAX_BUFFERED_RESULT_READ_BYTES } from '../../src/server/result-read-handler.js';
import { connectV1Http, connectV2Http, rejection, type V1HttpClient, type V2HttpClient } from '../helpers/official-clients.js';
import { overrideStore } from '../helpers/store-wrapper.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { modernMeta, pollModernTask, postModern } from '../helpers/wire.js';

const ISSUER = 'https://issuer.example';
const TOKEN_A = `a-${randomUUID()}`;
const TOKEN_B = `b-${randomUUID()}`;
const NOT_FOUND = { code: -32602, message: 'Resource not found' };

/** About 3 MiB of JSON with multi-byte characters everywhere (so chunk boundaries split some). */
function bigText(seed: string): string {
  const unit = `${seed} héllo ✓ 漢字 🙂 "quoted" \\ line\n`;
  return unit.repeat(Math.ceil(2_600_000 / unit.length));
}
const wholeJson = (seed: string) => JSON.stringify({ content: [{ type: 'text', text: bigText(seed) }] });

const bigTool = defineTool({
  name: 'big',
  description: 'Returns a large text result.',
  execution: 'task-optional',
  inputSchema: z.object({ seed: z.string() }),
  run: ({ seed }) => Promise.resolve(textResult(bigText(seed))),
});

function authenticator(): TokenFileAuthenticator {
  return new TokenFileAuthenticator({
    tokens: [
      { token: TOKEN_A, issuer: ISSUER, subject: 'alice', tenant: 'acme' },
      { token: TOKEN_B, issuer: ISSUER, subject: 'bob', tenant: 'acme' },
    ],
  });
}

/** The JSON text a reader gets by concatenating the chunk blobs in order. */
function joined(blobs: string[]): string {
  return Buffer.concat(blobs.map((blob) => Buffer.from(blob, 'base64'))).toString('utf8');
}

/** Holds back reads of chunk 1 while armed, until released. */
class ChunkHold {
  private gate: Promise<void> | undefined;
  arm(): () => void {
    let release!: () => void;
    this.gate = new Promise<void>((resolve) => (release = resolve));
    return () => {
      this.gate = undefined;
      release();
    };
  }
  async read(store: TaskStore, taskId: string, index: number): Promise<Uint8Array | undefined> {
    if (index === 1 && this.gate) await this.gate;
    return store.readResultChunk(taskId, index);
  }
}
const held = new ChunkHold();

describe.each([
  { path: 'fast path', fastPath: true },
  { path: 'SDK path', fastPath: false },
])('issue 23 §5: bounded reads of a large result, $path server', ({ fastPath }) => {
  let running: RunningTasksServer;
  let v1: V1HttpClient;
  let v2: V2HttpClient;
  let taskId: string;
  let seed: string;
  beforeAll(async () => {
    running = await startTasksServer({
      tools: [bigTool],
      auth: authenticator(),
      limits: { pollIntervalMs: 50, maxResultBytes: 300_000, maxStoredResultBytes: 8_000_000 },
      fastPath,
      wrapStore: (store) => overrideStore(store, { readResultChunk: (id: string, index: number) => held.read(store, id, index) }),
    });
    v1 = await connectV1Http(running.url, { token: TOKEN_A });
    v2 = await connectV2Http(running.url, { token: TOKEN_A });
    seed = randomUUID();
    const created = await postModern(running.url, 'tools/call', { name: 'big', arguments: { seed } }, { token: TOKEN_A });
    taskId = created.body.result?.taskId as string;
    expect(await pollModernTask(running.url, taskId, { token: TOKEN_A, timeoutMs: 60_000 })).toMatchObject({ status: 'completed' });
  }, 90_000);
  afterAll(async () => {
    await v1?.close();
    await v2?.close();
    await running?.close();
  });

  /**
   * Read `uri` raw while the store holds back chunk 1 until the first bytes of the answer arrive: a streamed answer
   * sends chunk 0 first; a buffered one sends nothing before it has every chunk, so the hold is only let go by a
   * deadlock breaker (20 s, generous on a loaded machine) and `streamed` is false.
   */
  async function readWhileHoldingChunk1(uri: string, meta: Record<string, unknown>): Promise<{ streamed: boolean; body: string }> {
    let streamed = true;
    const released = held.arm();
    const breaker = setTimeout(() => {
      streamed = false;
      released();
    }, 20_000);
    try {
      const response = await fetch(running.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'resources/read',
          'mcp-name': uri,
          authorization: `Bearer ${TOKEN_A}`,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri, _meta: { ...modernMeta(), ...meta } } }),
      });
      const parts: Buffer[] = [];
      for await (const part of response.body as unknown as AsyncIterable<Uint8Array>) {
        if (parts.length === 0) released();
        parts.push(Buffer.from(part));
      }
      return { streamed, body: Buffer.concat(parts).toString('utf8') };
    } finally {
      clearTimeout(breaker);
      released();
    }
  }

  const bytes = () => Buffer.byteLength(wholeJson(seed));
  const chunks = () => Math.ceil(bytes() / RESULT_READ_CHUNK_BYTES);
  const read = (uri: string, meta: Record<string, unknown> = {}, token = TOKEN_A) =>
    postModern(running.url, 'resources/read', { uri, _meta: meta }, { token, headers: { 'mcp-name': uri } });

  it('the result is above the SDK path bound (the premise of the other cases)', () => {
    expect(bytes()).toBeGreaterThan(2 * MAX_BUFFERED_RESULT_READ_BYTES);
    expect(chunks()).toBeGreaterThan(32);
  });

  if (fastPath) {
    it('a plain read and a read with an extra _meta key are both streamed (first bytes out before chunk 1 is read) and byte-exact', async () => {
      for (const meta of [{}, { 'bench/sdk-path': true, progressToken: 7 }]) {
        const { streamed, body } = await readWhileHoldingChunk1(resultResourceUri(taskId), meta);
        expect(streamed, JSON.stringify(meta)).toBe(true);
        expect((JSON.parse(body) as { result: { contents: Array<{ text: string }> } }).result.contents[0]?.text).toBe(wholeJson(seed));
      }
    });
  } else {
    it('v2: the whole read is refused with -31004 read_in_chunks naming the chunk resources (the SDK client sees the same)', async () => {
      const uri = resultResourceUri(taskId);
      const refused = await read(uri);
      expect(refused.body.error).toMatchObject({
        code: ErrorCode.ResultReadTooLarge,
        data: { reason: 'read_in_chunks', uri, bytes: bytes(), limit: MAX_BUFFERED_RESULT_READ_BYTES, chunks: chunks(), chunkUri: `${uri}/chunks/{index}` },
      });
      expect(refused.body.error?.message).toContain(resultChunkUri(taskId, 0));
      expect(refused.body.error?.message).toContain(resultChunkUri(taskId, chunks() - 1));
      // The SDK client too: the same refusal.
      expect(await rejection(v2.client.readResource({ uri }))).toMatchObject({ code: ErrorCode.ResultReadTooLarge });
    });
  }

  it('v2 and v1: the chunk resources are base64 blobs that concatenate to the result, byte for byte', async () => {
    const v2Blobs: string[] = [];
    const v1Blobs: string[] = [];
    for (let index = 0; index < chunks(); index += 1) {
      const uri = resultChunkUri(taskId, index);
      const viaV2 = await v2.client.readResource({ uri });
      expect(viaV2.contents[0]).toMatchObject({ uri, mimeType: 'application/octet-stream' });
      v2Blobs.push((viaV2.contents[0] as { blob: string }).blob);
      v1Blobs.push(((await v1.client.readResource({ uri })).contents[0] as { blob: string }).blob);
    }
    expect(joined(v2Blobs)).toBe(wholeJson(seed));
    expect(joined(v1Blobs)).toBe(wholeJson(seed));
    const wire = await v2.http.lastResponse('resources/read');
    expect(wire.result).toMatchObject({ cacheScope: 'private', resultType: 'complete' });
  });

  it("a chunk past the end, a malformed chunk URI and another owner's chunk all get the same -32602", async () => {
    for (const uri of [
      resultChunkUri(taskId, chunks()),
      `${resultResourceUri(taskId)}/chunks/01`,
      `${resultResourceUri(taskId)}/chunks/-1`,
      `${resultResourceUri(taskId)}/chunks/`,
    ]) {
      expect((await read(uri)).body.error, uri).toEqual(NOT_FOUND);
    }
    expect((await read(resultChunkUri(taskId, 0), {}, TOKEN_B)).body.error).toEqual(NOT_FOUND);
    // Negative control: the owner reads that chunk.
    expect((await read(resultChunkUri(taskId, 0))).body.result?.contents).toHaveLength(1);
  });
});
