import { randomBytes } from 'node:crypto';

import type { ServerContext } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';

import { createGatherStateCodec } from '../../src/server/input-gathering.js';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const context = (ownerKey: string) => ({ http: { authInfo: { extra: { ownerKey } } }, mcpReq: { method: 'tools/call' } }) as unknown as ServerContext;

describe('MRTR requestState (B15)', () => {
  const codec = createGatherStateCodec(randomBytes(32));

  it('verifies for its owner and method; another owner, an altered body and another spelling of the MAC are refused', async () => {
    const state = await codec.mint({ tool: 'x', argsDigest: 'd', answers: {} } as never, context('i|a|t'));
    await expect(codec.verify(state, context('i|a|t'))).resolves.toMatchObject({ tool: 'x' });
    await expect(codec.verify(state, context('i|b|t'))).rejects.toThrow();
    // A 32-byte HMAC is 43 base64url characters: the last one has 4 spare bits, so 15 other characters decode alike.
    const last = state.at(-1) as string;
    const mac = state.slice(state.lastIndexOf('.') + 1);
    const spellings = ALPHABET.split('').filter(
      (char) => char !== last && Buffer.from(`${mac.slice(0, -1)}${char}`, 'base64url').equals(Buffer.from(mac, 'base64url')),
    );
    expect(spellings.length).toBeGreaterThan(0);
    for (const char of spellings) await expect(codec.verify(`${state.slice(0, -1)}${char}`, context('i|a|t'))).rejects.toThrow();
  });
});
