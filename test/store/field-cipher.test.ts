import { randomBytes } from 'node:crypto';

import { describe, expect, it } from 'vitest';

import { StoreError } from '../../src/core/store-error.js';
import { AesGcmFieldCipher, keyIdOf, NO_ENCRYPTION, parseEncryptionKey } from '../../src/store/field-cipher.js';

describe('AesGcmFieldCipher', () => {
  const k1 = randomBytes(32);
  const k2 = randomBytes(32);

  it('round-trips, with a fresh IV per value and the key id in clear', () => {
    const cipher = new AesGcmFieldCipher(k1);
    const a = cipher.seal('{"secret":"x"}', 'tasks.arguments\u0000t1');
    const b = cipher.seal('{"secret":"x"}', 'tasks.arguments\u0000t1');
    expect(a).not.toBe(b);
    expect(a.startsWith(`enc1:${keyIdOf(k1)}:`)).toBe(true);
    expect(a).not.toContain('secret');
    expect(cipher.open(a, 'tasks.arguments\u0000t1')).toBe('{"secret":"x"}');
    // Plaintext written before encryption was turned on is read as it is.
    expect(cipher.open('{"old":true}', 'tasks.arguments\u0000t1')).toBe('{"old":true}');
  });

  it('a value moved to another row or column, or altered, does not decrypt (StoreError fault)', () => {
    const cipher = new AesGcmFieldCipher(k1);
    const sealed = cipher.seal('{"secret":"x"}', 'tasks.arguments\u0000t1');
    expect(() => cipher.open(sealed, 'tasks.arguments\u0000t2')).toThrow(/does not authenticate/);
    expect(() => cipher.open(sealed, 'task_steps.value\u0000t1\u0000s')).toThrow(StoreError);
    const flipped = `${sealed.slice(0, -2)}${sealed.at(-2) === 'A' ? 'B' : 'A'}${sealed.at(-1)}`;
    expect(() => cipher.open(flipped, 'tasks.arguments\u0000t1')).toThrow(/does not authenticate/);
    expect(() => cipher.open(`enc1:${keyIdOf(k1)}:AAAA`, 'x')).toThrow(/does not authenticate/);
  });

  it('rotation: the current key writes, old keys still read; an unknown key id is named', () => {
    const before = new AesGcmFieldCipher(k1).seal('"v"', 'c');
    const rotated = new AesGcmFieldCipher(k2, [k1]);
    expect(rotated.open(before, 'c')).toBe('"v"');
    expect(rotated.seal('"w"', 'c').startsWith(`enc1:${keyIdOf(k2)}:`)).toBe(true);
    expect(() => new AesGcmFieldCipher(k2).open(before, 'c')).toThrow(`key id ${keyIdOf(k1)} is not configured`);
    expect(() => NO_ENCRYPTION.open(before, 'c')).toThrow(/no encryption key is set/);
    expect(NO_ENCRYPTION.seal('"v"', 'c')).toBe('"v"');
  });

  it('keys come as 64 hex digits or base64 of 32 bytes; the environment names what is wrong', () => {
    expect(parseEncryptionKey(k1.toString('hex'), 'K')).toEqual(k1);
    expect(parseEncryptionKey(k1.toString('base64'), 'K')).toEqual(k1);
    expect(parseEncryptionKey(k1.toString('base64url'), 'K')).toEqual(k1);
    expect(() => parseEncryptionKey('abc', 'K')).toThrow('K must be 32 bytes');
    expect(() => parseEncryptionKey(randomBytes(16).toString('hex'), 'K')).toThrow('K must be 32 bytes');
    expect(AesGcmFieldCipher.fromEnvironment({})).toBe(NO_ENCRYPTION);
    expect(AesGcmFieldCipher.fromEnvironment({ MCP_TASKS_ENCRYPTION_KEY: '' })).toBe(NO_ENCRYPTION);
    const env = AesGcmFieldCipher.fromEnvironment({
      MCP_TASKS_ENCRYPTION_KEY: k2.toString('base64'),
      MCP_TASKS_ENCRYPTION_KEYS_OLD: ` ${k1.toString('hex')} ,`,
    });
    expect(env.open(new AesGcmFieldCipher(k1).seal('"v"', 'c'), 'c')).toBe('"v"');
    expect(() => AesGcmFieldCipher.fromEnvironment({ MCP_TASKS_ENCRYPTION_KEYS_OLD: k1.toString('hex') })).toThrow(/needs MCP_TASKS_ENCRYPTION_KEY/);
    expect(() => AesGcmFieldCipher.fromEnvironment({ MCP_TASKS_ENCRYPTION_KEY: k2.toString('hex'), MCP_TASKS_ENCRYPTION_KEYS_OLD: 'nope' })).toThrow(
      'MCP_TASKS_ENCRYPTION_KEYS_OLD entry 1 must be 32 bytes',
    );
  });
});
