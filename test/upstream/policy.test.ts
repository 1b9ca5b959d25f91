import { describe, expect, it } from 'vitest';

import { checkUpstreamRules, DEFAULT_UPSTREAM_POLICY, resolveUpstreamPolicy } from '../../src/upstream/policy.js';

describe('upstream tool policy (issue 28)', () => {
  it('defaults to task-optional and not idempotent: an interrupted call is never sent again silently', () => {
    expect(DEFAULT_UPSTREAM_POLICY).toEqual({ execution: 'task-optional', idempotent: false });
    expect(resolveUpstreamPolicy('everything_echo', {})).toEqual({ execution: 'task-optional', idempotent: false });
  });

  it('per field, an exact name beats a longer prefix, which beats a shorter prefix, which beats *', () => {
    const rules = {
      '*': { execution: 'sync', idempotent: true },
      'everything_*': { execution: 'task-required' },
      'everything_get-*': { idempotent: false },
      'everything_get-sum': { execution: 'task-optional' },
    } as const;
    expect(resolveUpstreamPolicy('everything_get-sum', rules)).toEqual({ execution: 'task-optional', idempotent: false });
    expect(resolveUpstreamPolicy('everything_get-env', rules)).toEqual({ execution: 'task-required', idempotent: false });
    expect(resolveUpstreamPolicy('everything_echo', rules)).toEqual({ execution: 'task-required', idempotent: true });
    expect(resolveUpstreamPolicy('fs_read', rules)).toEqual({ execution: 'sync', idempotent: true });
  });

  it('runtimeLimitMs and defaultTtlMs resolve per field like the others, and are absent unless a rule sets them', () => {
    const rules = { 'e_*': { runtimeLimitMs: 60_000, defaultTtlMs: 600_000 }, e_long: { runtimeLimitMs: 5_000 } };
    expect(resolveUpstreamPolicy('e_long', rules)).toEqual({ execution: 'task-optional', idempotent: false, runtimeLimitMs: 5_000, defaultTtlMs: 600_000 });
    expect(resolveUpstreamPolicy('e_echo', rules)).toEqual({ execution: 'task-optional', idempotent: false, runtimeLimitMs: 60_000, defaultTtlMs: 600_000 });
    expect(resolveUpstreamPolicy('f_echo', rules)).toEqual({ execution: 'task-optional', idempotent: false });
  });

  it('the order of the rules in the file does not matter', () => {
    const forward = { 'a_*': { idempotent: true }, a_x: { idempotent: false } };
    const backward = { a_x: { idempotent: false }, 'a_*': { idempotent: true } };
    expect(resolveUpstreamPolicy('a_x', forward)).toEqual(resolveUpstreamPolicy('a_x', backward));
    expect(resolveUpstreamPolicy('a_x', forward).idempotent).toBe(false);
  });

  it('a rule that names no listed tool is refused, naming it and the tools there are', () => {
    expect(() => checkUpstreamRules({ 'everything_*': {}, everything_eccho: { idempotent: true } }, ['everything_echo'])).toThrow(
      'upstreamTools names no upstream tool: everything_eccho (upstream tools: everything_echo)',
    );
    expect(() => checkUpstreamRules({ 'everything_*': {}, '*': {} }, ['everything_echo'])).not.toThrow();
  });
});
