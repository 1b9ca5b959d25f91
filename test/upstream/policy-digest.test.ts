import { describe, expect, it } from 'vitest';
import { z } from 'zod';

import { settingsDigest } from '../../src/cli/settings.js';
import { DEFAULT_LIMITS } from '../../src/core/limits.js';
import { settingsDifference } from '../../src/core/process-record.js';
import { type AnyToolDefinition, defineTool, textResult } from '../../src/core/tool.js';

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
