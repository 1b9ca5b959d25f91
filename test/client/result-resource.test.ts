/**
 * `readResultResource`: a large result read back whole, or — when the server answers `-31004` `read_in_chunks`
 * (its buffered path: stdio, HTTP requests the fast path does not take) — chunk by chunk. The CLI's end-to-end test
 * (test/cli/result-output.test.ts) goes through HTTP, whose fast path streams the whole result; the chunked answers
 * here are the server's documented ones (`resultReadTooLarge`, base64 `blob` chunks).
 */
import { describe, expect, it } from 'vitest';

import { TasksProtocolError } from '../../src/client/index.js';
import { readResultResource, resultResourceUri } from '../../src/client/result-resource.js';
import type { McpSession } from '../../src/client/session.js';
import { resultReadTooLarge } from '../../src/core/errors.js';
import { RESULT_READ_CHUNK_BYTES } from '../../src/protocol/result-uri.js';

const URI = 'mcp-tasks://tasks/AbCdEfGhIjKlMnOpQrStUv/result';
const WHOLE = JSON.stringify({ content: [{ type: 'text', text: `héllo ${'x'.repeat(RESULT_READ_CHUNK_BYTES)} wörld 漢字` }], isError: false });

/** A session that answers resources/read as the server's buffered path does: whole refused, 64 KiB chunks. */
function chunkingSession(reads: string[]): McpSession {
  const bytes = Buffer.from(WHOLE, 'utf8');
  const size = RESULT_READ_CHUNK_BYTES;
  const chunks = Math.ceil(bytes.length / size);
  return {
    async request(_method: string, params: Record<string, unknown>) {
      const uri = params.uri as string;
      reads.push(uri);
      if (uri === URI) {
        const refusal = resultReadTooLarge('AbCdEfGhIjKlMnOpQrStUv', bytes.length, chunks, size);
        throw new TasksProtocolError(refusal.message, refusal.code, refusal.data as never);
      }
      const index = Number(/\/chunks\/(\d+)$/.exec(uri)?.[1]);
      // Chunk boundaries fall inside multi-byte characters: they must be joined as bytes, not as text.
      return { contents: [{ uri, blob: bytes.subarray(index * size, index * size + size).toString('base64') }] };
    },
  } as unknown as McpSession;
}

describe('readResultResource', () => {
  it('reads the chunks the -31004 answer names, joins their bytes and returns the tool result', async () => {
    const reads: string[] = [];
    const result = await readResultResource(chunkingSession(reads), URI);
    expect(result).toMatchObject(JSON.parse(WHOLE));
    expect(reads[0]).toBe(URI);
    expect(reads.slice(1)).toEqual(Array.from({ length: reads.length - 1 }, (_, i) => `${URI}/chunks/${i}`));
  });

  it('a whole answer as text is taken as it is; another error passes through (control)', async () => {
    const whole = { request: async () => ({ contents: [{ uri: URI, text: WHOLE }] }) } as unknown as McpSession;
    expect(await readResultResource(whole, URI)).toMatchObject(JSON.parse(WHOLE));
    const gone = {
      request: async () => {
        throw new TasksProtocolError('Resource not found', -32602);
      },
    } as unknown as McpSession;
    await expect(readResultResource(gone, URI)).rejects.toMatchObject({ code: -32602 });
  });

  it('resultResourceUri finds the link of a bounded result, and nothing in a whole one', () => {
    expect(resultResourceUri({ content: [{ type: 'text', text: 'first part' }, { type: 'resource_link', uri: URI, name: 'r' } as never] })).toBe(URI);
    expect(resultResourceUri({ content: [{ type: 'resource_link', uri: 'file:///etc/passwd', name: 'x' } as never] })).toBeUndefined();
    expect(resultResourceUri({ content: [{ type: 'text', text: 'whole' }] })).toBeUndefined();
  });
});
