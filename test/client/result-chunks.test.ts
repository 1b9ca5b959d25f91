/**
 * `readResultChunks`: a large result's chunk resources read through the session in order, a few in flight, their
 * lengths checked against the link's size; without a size, the end found at a short chunk or at the first index
 * the server does not know (told apart from a result gone).
 */
import { describe, expect, it } from 'vitest';

import { TaskNotFoundError, TasksProtocolError } from '../../src/client/index.js';
import { CHUNK_READS_IN_FLIGHT, readResultChunks } from '../../src/client/result-chunks.js';
import type { McpSession } from '../../src/client/session.js';
import { RESULT_READ_CHUNK_BYTES } from '../../src/protocol/result-uri.js';

const TASK = 'AbCdEfGhIjKlMnOpQrStUv';
const URI = `mcp-tasks://tasks/${TASK}/result`;

/** A session serving `data` as 64 KiB chunk resources, answering out of order; `gone` makes every read -32602. */
function chunkSession(data: Buffer, log: { reads: number[]; maxInFlight: number; gone?: boolean }): McpSession {
  let inFlight = 0;
  return {
    async request(_method: string, params: Record<string, unknown>, _schema: unknown, options: { signal?: AbortSignal }) {
      const index = Number(/\/chunks\/(\d+)$/.exec(params.uri as string)?.[1]);
      log.reads.push(index);
      inFlight += 1;
      log.maxInFlight = Math.max(log.maxInFlight, inFlight);
      // Later chunks answer first: the reader must still hand them out in order.
      for (let turn = 0; turn < 8 - (index % 8); turn += 1) await Promise.resolve();
      inFlight -= 1;
      options.signal?.throwIfAborted();
      const start = index * RESULT_READ_CHUNK_BYTES;
      if (log.gone || start >= data.length) throw new TasksProtocolError('Resource not found', -32602);
      return { contents: [{ uri: params.uri, blob: data.subarray(start, start + RESULT_READ_CHUNK_BYTES).toString('base64') }] };
    },
  } as unknown as McpSession;
}

async function collect(session: McpSession, bytes?: number, signal?: AbortSignal): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of readResultChunks(session, URI, { ...(bytes === undefined ? {} : { bytes }), ...(signal ? { signal } : {}) })) parts.push(chunk);
  return Buffer.concat(parts);
}

const data = (length: number): Buffer => Buffer.from(Array.from({ length }, (_, i) => i % 251));

describe('readResultChunks', () => {
  it('with the size: every chunk once, in order, a few in flight, the bytes joined as they were', async () => {
    const whole = data(5 * RESULT_READ_CHUNK_BYTES + 123);
    const log = { reads: [] as number[], maxInFlight: 0 };
    expect((await collect(chunkSession(whole, log), whole.length)).equals(whole)).toBe(true);
    expect(log.reads.sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(log.maxInFlight).toBe(CHUNK_READS_IN_FLIGHT);
  });

  it('without the size: ends at a short chunk, or at the index past a whole number of chunks', async () => {
    for (const length of [3 * RESULT_READ_CHUNK_BYTES + 1, 3 * RESULT_READ_CHUNK_BYTES]) {
      const whole = data(length);
      expect((await collect(chunkSession(whole, { reads: [], maxInFlight: 0 }))).equals(whole)).toBe(true);
    }
  });

  it('a result gone is TaskNotFoundError; chunks that do not add up to the size are a protocol error', async () => {
    const whole = data(2 * RESULT_READ_CHUNK_BYTES);
    await expect(collect(chunkSession(whole, { reads: [], maxInFlight: 0, gone: true }))).rejects.toBeInstanceOf(TaskNotFoundError);
    await expect(collect(chunkSession(whole, { reads: [], maxInFlight: 0, gone: true }), whole.length)).rejects.toBeInstanceOf(TaskNotFoundError);
    await expect(collect(chunkSession(whole, { reads: [], maxInFlight: 0 }), whole.length + 10)).rejects.toBeInstanceOf(TasksProtocolError);
  });

  it("a size that counts a chunk more than the server has is the server's fault (protocol error), not a result gone; control: gone with the same size", async () => {
    const whole = data(2 * RESULT_READ_CHUNK_BYTES);
    const overstated = whole.length + RESULT_READ_CHUNK_BYTES;
    const log = { reads: [] as number[], maxInFlight: 0 };
    const error = await collect(chunkSession(whole, log), overstated).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TasksProtocolError);
    expect(String((error as Error).message)).toContain(`chunk 2 does not exist, but the result's ${overstated} bytes need 3 chunks`);
    // Told apart by reading the chunk before again: it is still there.
    expect(log.reads.filter((index) => index === 1)).toHaveLength(2);
    await expect(collect(chunkSession(whole, { reads: [], maxInFlight: 0, gone: true }), overstated)).rejects.toBeInstanceOf(TaskNotFoundError);
  });

  it('an aborted signal ends the reads with its error', async () => {
    const whole = data(8 * RESULT_READ_CHUNK_BYTES);
    const controller = new AbortController();
    const parts: Buffer[] = [];
    const reading = (async () => {
      for await (const chunk of readResultChunks(chunkSession(whole, { reads: [], maxInFlight: 0 }), URI, { bytes: whole.length, signal: controller.signal })) {
        parts.push(chunk);
        controller.abort(new Error('interrupted'));
      }
    })();
    await expect(reading).rejects.toThrow('interrupted');
    expect(parts).toHaveLength(1);
  });
});
