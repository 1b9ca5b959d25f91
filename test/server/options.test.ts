import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { DEFAULT_LIMITS, resolveLimits } from '../../src/core/limits.js';
import { loadServerSecret } from '../../src/server/signing-key.js';
import { effectiveTtlMs } from '../../src/service/ttl-policy.js';
import { ensureBuilt } from '../cli/support.js';
import { makeTempDir } from '../helpers/temp-dir.js';

describe('server settings', () => {
  it('a runtime limit above the maximum TTL is a start-up error, and every problem is reported at once', () => {
    expect(() => resolveLimits({ runtimeLimitMs: 2 * 3_600_000, maxTtlMs: 3_600_000 })).toThrow(/runtimeLimitMs \(7200000\) must not exceed maxTtlMs/);
    try {
      resolveLimits({ concurrency: 0, listPageSize: 500, runtimeLimitMs: 10, maxTtlMs: 5, defaultTtlMs: 5 });
      expect.unreachable();
    } catch (error) {
      const message = (error as Error).message;
      expect(message).toMatch(/concurrency must be a positive integer/);
      expect(message).toMatch(/listPageSize must be between 1 and 100/);
      expect(message).toMatch(/runtimeLimitMs \(10\) must not exceed maxTtlMs \(5\)/);
      expect((error as { code?: number }).code).toBe(-32602);
    }
    expect(resolveLimits()).toEqual(DEFAULT_LIMITS);
  });

  it('library limits a timer waits for are at most 2^31 − 1 ms, as in the configuration file; retentions are not timers', () => {
    const big = { maxTtlMs: null, defaultTtlMs: null };
    expect(() => resolveLimits({ ...big, runtimeLimitMs: 2_147_483_648 })).toThrow(/runtimeLimitMs must be at most 2147483647 ms/);
    expect(() => resolveLimits({ ...big, leaseMs: 3_000_000_000, inputTimeoutMs: 2_147_483_648 })).toThrow(
      /leaseMs must be at most.*inputTimeoutMs must be at most/s,
    );
    // The largest timer and a long retention are accepted.
    expect(resolveLimits({ ...big, runtimeLimitMs: 2_147_483_647, idempotencyWindowMs: 10 * 2_147_483_647 }).runtimeLimitMs).toBe(2_147_483_647);
  });

  it('retention: the default TTL must outlast a run to the runtime limit by minResultRetentionMs (default 10 min); defaults satisfy it', () => {
    expect(DEFAULT_LIMITS.defaultTtlMs! - DEFAULT_LIMITS.runtimeLimitMs).toBeGreaterThanOrEqual(DEFAULT_LIMITS.minResultRetentionMs);
    expect(DEFAULT_LIMITS.minResultRetentionMs).toBe(600_000);
    // A run of the full hour would leave its result 5 minutes: refused, saying why.
    expect(() => resolveLimits({ runtimeLimitMs: 3_600_000, defaultTtlMs: 3_900_000 })).toThrow(
      /defaultTtlMs \(3900000\) must exceed runtimeLimitMs \(3600000\) by at least minResultRetentionMs \(600000\): a task that runs to the runtime limit would keep its result only 300000 ms/,
    );
    // Exactly the margin is enough; a shorter runtime limit or a smaller margin makes a short TTL acceptable.
    expect(resolveLimits({ runtimeLimitMs: 3_600_000, defaultTtlMs: 4_200_000 }).defaultTtlMs).toBe(4_200_000);
    expect(resolveLimits({ runtimeLimitMs: 60_000, defaultTtlMs: 660_000 }).defaultTtlMs).toBe(660_000);
    expect(resolveLimits({ runtimeLimitMs: 30_000, defaultTtlMs: 30_000, minResultRetentionMs: 0 }).defaultTtlMs).toBe(30_000);
    expect(() => resolveLimits({ minResultRetentionMs: -1 })).toThrow(/minResultRetentionMs must be a non-negative integer/);
    // Unlimited retention keeps every result; a requested v1 ttl is the requestor's choice, not held to the rule.
    expect(resolveLimits({ defaultTtlMs: null, maxTtlMs: null }).defaultTtlMs).toBeNull();
    expect(effectiveTtlMs(resolveLimits(), 5_000)).toBe(5_000);
  });

  it('R18/R19 a requested v1 ttl is clamped into [minTtlMs, maxTtlMs]; none requested gets the default', () => {
    const limits = { defaultTtlMs: 60_000, maxTtlMs: 120_000, minTtlMs: 1_000 };
    expect(effectiveTtlMs(limits, undefined)).toBe(60_000);
    expect(effectiveTtlMs(limits, 0)).toBe(1_000);
    expect(effectiveTtlMs(limits, 90_000)).toBe(90_000);
    expect(effectiveTtlMs(limits, 10_000_000)).toBe(120_000);
    expect(effectiveTtlMs({ ...limits, maxTtlMs: null }, 10_000_000)).toBe(10_000_000);
  });

  it('the server secret is generated once into the data directory with mode 0600 and reused; MCP_TASKS_SECRET wins', () => {
    const temp = makeTempDir();
    try {
      const first = loadServerSecret(temp.dir, {});
      expect(first.length).toBe(32);
      expect(statSync(join(temp.dir, 'secret')).mode & 0o777).toBe(0o600);
      expect(loadServerSecret(temp.dir, {}).equals(first)).toBe(true);
      expect(loadServerSecret(temp.dir, { MCP_TASKS_SECRET: 'from-the-environment' }).toString()).toBe('from-the-environment');
    } finally {
      temp.remove();
    }
  });

  it('a secret file still being written (empty) is read again until it is whole; one that stays empty is refused (defect: a second serve started beside the first read an empty secret and refused to start)', async () => {
    const temp = makeTempDir();
    try {
      const path = join(temp.dir, 'secret');
      // What another process's file looked like between its creation and its write.
      writeFileSync(path, '');
      const whole = randomBytes(32).toString('base64url');
      const writer = spawn(process.execPath, ['-e', `setTimeout(() => require('node:fs').writeFileSync(${JSON.stringify(path)}, '${whole}\\n'), 300)`]);
      expect(loadServerSecret(temp.dir, {}).toString('base64url')).toBe(whole);
      writer.kill();
      writeFileSync(path, '');
      expect(() => loadServerSecret(temp.dir, {})).toThrow(`the server secret file ${path} is empty: delete it`);
      // Several processes starting at once on a fresh directory agree on one secret; no temporary file is left.
      ensureBuilt();
      const fresh = join(temp.dir, 'fresh');
      const module = JSON.stringify(new URL('../../dist/server/signing-key.js', import.meta.url).href);
      const starts = await Promise.all(
        Array.from({ length: 6 }, async () => {
          const child = spawn(process.execPath, [
            '--input-type=module',
            '-e',
            `const { loadServerSecret } = await import(${module}); process.stdout.write(loadServerSecret(${JSON.stringify(fresh)}, {}).toString('hex'))`,
          ]);
          let out = '';
          child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
          await new Promise((resolve) => child.once('exit', resolve));
          return out;
        }),
      );
      expect(starts.every((secret) => secret.length === 64)).toBe(true);
      expect(new Set(starts).size).toBe(1);
      expect(readdirSync(fresh)).toEqual(['secret']);
    } finally {
      temp.remove();
    }
  });
});
