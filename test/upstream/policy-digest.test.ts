import { randomBytes } from 'node:crypto';

import { describe, expect, it } from 'vitest';
import { z } from 'zod';

import { settingsDigest } from '../../src/cli/settings.js';
import { DEFAULT_LIMITS } from '../../src/core/limits.js';
import { settingsDifference } from '../../src/core/process-record.js';
import { type AnyToolDefinition, defineTool, textResult } from '../../src/core/tool.js';
import { AesGcmFieldCipher } from '../../src/store/field-cipher.js';

/**
 * Issue 28 (found by a newcomer's trial): an API process and a worker with other `upstreamTools` rules for the same
 * tool started side by side, and whichever ran a call decided its re-runs and runtime limit. How each tool runs is
 * part of the settings digest, so such a process refuses to start beside the other (naming `toolPolicies`).
 */
const tool = (extra: Partial<AnyToolDefinition> = {}): AnyToolDefinition =>
  defineTool({
    name: 'up_long',
    description: 'd',
    execution: 'task-optional',
    inputSchema: z.object({}),
    run: async () => textResult(''),
    ...extra,
  } as AnyToolDefinition);
const digest = (tools: AnyToolDefinition[]) => settingsDigest({ roots: [], writableRoots: [], tools, checkTargets: [], limits: DEFAULT_LIMITS, keyId: null });

describe('the settings digest covers how each tool runs', () => {
  it('the same tool names with another policy differ in toolPolicies, and only there', () => {
    const base = digest([tool()]);
    for (const extra of [
      { idempotent: true },
      { runtimeLimitMs: 1000 },
      { defaultTtlMs: 5000 },
      { execution: 'task-required' as const },
      { elicits: 'in-place' as const },
    ])
      expect(settingsDifference(base, digest([tool(extra)])), JSON.stringify(extra)).toEqual(['toolPolicies']);
  });

  it('control: the same policies in another order give the same digest', () => {
    const other = defineTool({
      name: 'a_first',
      description: 'd',
      execution: 'sync',
      inputSchema: z.object({}),
      run: async () => textResult(''),
    }) as AnyToolDefinition;
    expect(digest([tool(), other])).toBe(digest([other, tool()]));
  });
});

describe('the settings digest covers the keys that only decrypt (stop 41)', () => {
  const withKeys = (keyId: string | null, oldKeyIds?: string[]) =>
    settingsDigest({ roots: [], writableRoots: [], tools: [], checkTargets: [], limits: DEFAULT_LIMITS, keyId, ...(oldKeyIds ? { oldKeyIds } : {}) });

  it('a process missing an old key differs in oldKeyIds, and only there (its runs of tasks written with it would fail)', () => {
    expect(settingsDifference(withKeys('k2', ['k1']), withKeys('k2', []))).toEqual(['oldKeyIds']);
    expect(settingsDifference(withKeys('k2', ['k1', 'k0']), withKeys('k2', ['k1']))).toEqual(['oldKeyIds']);
  });

  it("a cipher's read-only key ids are the old keys' ids, never the current one's", () => {
    const [k0, k1, k2] = [randomBytes(32), randomBytes(32), randomBytes(32)];
    const idOf = (key: Buffer) => new AesGcmFieldCipher(key).keyId;
    expect(new AesGcmFieldCipher(k2, [k1, k0]).readOnlyKeyIds).toEqual([idOf(k0), idOf(k1)].sort());
    expect(new AesGcmFieldCipher(k2).readOnlyKeyIds).toEqual([]);
  });

  it('control: the same old keys in another order agree; another current key differs in keyId', () => {
    expect(settingsDifference(withKeys('k2', ['k0', 'k1']), withKeys('k2', ['k1', 'k0']))).toEqual([]);
    expect(settingsDifference(withKeys('k2', ['k1']), withKeys('k3', ['k1']))).toEqual(['keyId']);
  });
});
