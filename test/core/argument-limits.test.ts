import { describe, expect, it } from 'vitest';

import { checkArgumentLimits } from '../../src/core/argument-limits.js';
import { resolveLimits } from '../../src/core/limits.js';

/** Issue 10 §2 argument limits, as units (the e2e test is test/e2e/quotas-and-limits.test.ts). */
describe('argument limits', () => {
  it('arguments nested past the depth limit are refused by depth, without recursion on hostile nesting (the measure: json-depth.test.ts)', () => {
    let hostile: unknown = [];
    for (let i = 0; i < 200_000; i += 1) hostile = [hostile];
    expect(checkArgumentLimits(hostile, { maxArgumentBytes: 1 << 30, maxArgumentDepth: 32 })?.data).toEqual({ reason: 'argument_depth', limit: 32 });
  });

  it('size is the UTF-8 length of the JSON text; exactly at the limit passes, one byte more is refused', () => {
    const args = { s: 'é' }; // {"s":"é"} = 10 bytes
    expect(checkArgumentLimits(args, { maxArgumentBytes: 10, maxArgumentDepth: 32 })).toBeUndefined();
    const refused = checkArgumentLimits(args, { maxArgumentBytes: 9, maxArgumentDepth: 32 });
    expect(refused?.toJsonRpc()).toEqual({
      code: -32602,
      message: 'Invalid params for tools/call: arguments are 10 bytes of JSON, more than maxArgumentBytes (9 bytes, --max-argument-bytes)',
      data: { reason: 'argument_size', limit: 9, actual: 10 },
    });
  });

  it('settings: positive integers for the argument limits, positive or null for the quotas', () => {
    expect(resolveLimits()).toMatchObject({ maxArgumentBytes: 1024 * 1024, maxArgumentDepth: 32, maxActiveTasksPerOwner: null, maxCreatesPerMinute: null });
    expect(() => resolveLimits({ maxArgumentDepth: 0, maxActiveTasksPerOwner: -1, maxCreatesPerMinute: 1.5 })).toThrow(
      /maxArgumentDepth must be a positive integer[\s\S]*maxActiveTasksPerOwner must be a positive integer or null[\s\S]*maxCreatesPerMinute/,
    );
  });
});
