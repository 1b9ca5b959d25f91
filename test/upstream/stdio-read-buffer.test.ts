/**
 * Issue 28: the stdio upstream's read buffer (src/upstream/stdio-read-buffer.ts) keeps the SDK ReadBuffer's contract
 * — messages split across chunks, several in one chunk, CRLF, non-JSON lines skipped, the size limit — and is the one
 * the gateway's stdio transport really uses (a renamed SDK field would fail here, not silently go quadratic).
 */
import { ReadBuffer } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';

import { StdioTransport } from '../../src/upstream/connection.js';
import { LinearReadBuffer } from '../../src/upstream/stdio-read-buffer.js';

const line = (id: number, text = 'x'): string => `${JSON.stringify({ jsonrpc: '2.0', id, result: { text } })}\n`;

function drain(buffer: ReadBuffer): unknown[] {
  const messages: unknown[] = [];
  for (let message = buffer.readMessage(); message !== null; message = buffer.readMessage()) messages.push(message);
  return messages;
}

describe('LinearReadBuffer', () => {
  it('reads what the SDK ReadBuffer reads, from the same chunks (split, joined, CRLF, a non-JSON line)', () => {
    const text = line(1, 'a'.repeat(1000)) + 'not json\n' + line(2).replace('\n', '\r\n') + line(3);
    const bytes = Buffer.from(text);
    for (const size of [1, 7, 64, 1024, bytes.length]) {
      const ours = new LinearReadBuffer(1 << 20);
      const sdk = new ReadBuffer({ maxBufferSize: 1 << 20 });
      const got: unknown[][] = [[], []];
      for (let at = 0; at < bytes.length; at += size) {
        const chunk = bytes.subarray(at, at + size);
        ours.append(chunk);
        sdk.append(chunk);
        got[0]?.push(...drain(ours));
        got[1]?.push(...drain(sdk));
      }
      expect(got[0], `chunks of ${size}`).toEqual(got[1]);
      expect(got[0]?.map((message) => (message as { id: number }).id)).toEqual([1, 2, 3]);
    }
  });

  it('refuses to hold more than its limit with the SDK error, and is empty after it', () => {
    const buffer = new LinearReadBuffer(100);
    buffer.append(Buffer.alloc(60, 0x61));
    expect(() => buffer.append(Buffer.alloc(41, 0x61))).toThrow('ReadBuffer exceeded maximum size of 100 bytes');
    buffer.append(Buffer.from(line(4)));
    expect(drain(buffer)).toEqual([{ jsonrpc: '2.0', id: 4, result: { text: 'x' } }]);
  });

  it('is the read buffer of the gateway stdio transport', () => {
    const transport = new StdioTransport({ command: process.execPath, args: [], maxBufferSize: 1234 });
    const buffer = (transport as unknown as { _readBuffer?: unknown })._readBuffer;
    expect(buffer).toBeInstanceOf(LinearReadBuffer);
  });
});
