import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ConfigError, resolveConfig, SETTINGS } from '../../src/cli/config/resolve.js';
import { configJsonSchema } from '../../src/cli/config/schema.js';
import { DEFAULT_LIMITS } from '../../src/core/limits.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { cliRunner, ensureBuilt } from './support.js';

const ROOT = resolve(import.meta.dirname, '../..');

/** Every leaf key of a JSON Schema object (dotted), descending into nested objects that have `properties`. */
function leafKeys(schema: Record<string, unknown>, prefix = ''): string[] {
  const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  return Object.entries(properties).flatMap(([name, member]) => {
    if (name === '$schema') return [];
    const key = `${prefix}${name}`;
    return member.type === 'object' && member.properties ? leafKeys(member, `${key}.`) : [key];
  });
}

describe('one configuration: file, environment, flags, one resolver', () => {
  const temp = makeTempDir('mcp-tasks-config-');
  beforeAll(() => ensureBuilt());
  afterAll(() => temp.remove());

  it('the committed mcp-tasks.schema.json is the one generated from the zod schema (run `npm run config:schema`)', () => {
    const committed: unknown = JSON.parse(readFileSync(join(ROOT, 'mcp-tasks.schema.json'), 'utf8'));
    expect(committed).toEqual(configJsonSchema());
  });

  it('every setting of the schema has an entry in the resolver table, and no entry is unknown to the schema', () => {
    const schemaKeys = leafKeys(configJsonSchema()).sort();
    expect(SETTINGS.map((setting) => setting.key).sort()).toEqual(schemaKeys);
    // The settings that used to need the library API are reachable (issue 15 item 1).
    for (const key of [
      'limits.maxRequestBodyBytes',
      'limits.sessionIdleMs',
      'limits.maxSessions',
      'limits.listPageSize',
      'limits.claimIntervalMs',
      'limits.sweepIntervalMs',
      'limits.tailIntervalMs',
    ]) {
      const setting = SETTINGS.find((entry) => entry.key === key);
      expect(setting?.env, key).toMatch(/^MCP_TASKS_/);
      expect(setting?.flag, key).toMatch(/^--/);
    }
  });

  it('precedence is flag > env > file > default, and each value says where it came from', () => {
    const file = join(temp.dir, 'mcp-tasks.json');
    writeFileSync(file, JSON.stringify({ limits: { leaseMs: 1111, maxSessions: 7, listPageSize: 9 }, http: { port: 4000 }, roots: ['logs'] }));
    const resolved = resolveConfig({ configFile: file, env: { MCP_TASKS_LEASE_MS: '2222', MCP_TASKS_MAX_SESSIONS: '8' }, flags: { leaseMs: '3333' } });
    expect(resolved.values.get('limits.leaseMs')).toBe(3333);
    expect(resolved.sources.get('limits.leaseMs')).toBe('flag --lease-ms');
    expect(resolved.values.get('limits.maxSessions')).toBe(8);
    expect(resolved.sources.get('limits.maxSessions')).toBe('env MCP_TASKS_MAX_SESSIONS');
    expect(resolved.values.get('limits.listPageSize')).toBe(9);
    expect(resolved.sources.get('limits.listPageSize')).toBe(`file ${file}`);
    expect(resolved.values.get('limits.sessionIdleMs')).toBe(DEFAULT_LIMITS.sessionIdleMs);
    expect(resolved.sources.get('limits.sessionIdleMs')).toBe('default');
    // recoveryIntervalMs follows the effective leaseMs unless set (as resolveLimits does).
    expect(resolved.values.get('limits.recoveryIntervalMs')).toBe(3333);
    // Relative paths of a file are relative to the file.
    expect(resolved.values.get('roots')).toEqual([join(temp.dir, 'logs')]);
    // MCP_TASKS_CONFIG names the file when --config does not.
    expect(resolveConfig({ env: { MCP_TASKS_CONFIG: file }, flags: {} }).values.get('http.port')).toBe(4000);
  });

  it('every invalid value is reported at once, each with its key and source', () => {
    const file = join(temp.dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ limits: { leaseMs: -1, leaseMillis: 5 }, http: { port: 'eighty' }, unknownSetting: true }));
    let error: unknown;
    try {
      resolveConfig({ configFile: file, env: { MCP_TASKS_MAX_ATTEMPTS: 'three' }, flags: { concurrency: '0' } });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.map((problem) => `${problem.key} ${problem.source}`).sort();
    expect(problems).toEqual(
      [
        `limits.leaseMs file ${file}`,
        `limits.leaseMillis file ${file}`,
        `http.port file ${file}`,
        `unknownSetting file ${file}`,
        'limits.maxAttempts env MCP_TASKS_MAX_ATTEMPTS',
        'limits.concurrency flag --concurrency',
      ].sort(),
    );
  });

  it('a duration a timer waits for is at most 2^31 - 1 ms (a larger one would fire after 1 ms); a TTL may be longer', () => {
    const timerProblems = (flags: Record<string, string>): string[] => {
      try {
        resolveConfig({ configFile: undefined, env: {}, flags });
      } catch (caught) {
        return (caught as ConfigError).problems.map((problem) => `${problem.key} ${problem.message}`);
      }
      return [];
    };
    expect(timerProblems({ runtimeLimitMs: '2200000000', upstreamStartTimeoutMs: '2200000000' }).sort()).toEqual([
      expect.stringMatching(/^limits\.runtimeLimitMs .*2147483647/),
      expect.stringMatching(/^upstreamStartTimeoutMs .*2147483647/),
    ]);
    expect(timerProblems({ runtimeLimitMs: '2147483647', maxTtlMs: '2592000000', defaultTtlMs: '2592000000' })).toEqual([]);
  });

  it('serve refuses to start with every problem listed, exit 64, nothing written', async () => {
    const file = join(temp.dir, 'bad-serve.json');
    writeFileSync(file, JSON.stringify({ limits: { listPageSize: 500 }, logLevel: 'loud' }));
    const { cli } = cliRunner({ ...process.env, MCP_TASKS_SESSION_IDLE_MS: 'soon' });
    const run = await cli(['serve', '--config', file, '--data-dir', join(temp.dir, 'never'), '--port', '0', '--max-request-body-bytes', 'big']);
    expect(run.code).toBe(64);
    expect(run.stderr).toContain('4 problems');
    for (const fragment of [
      'limits.listPageSize',
      'logLevel',
      'limits.sessionIdleMs (env MCP_TASKS_SESSION_IDLE_MS)',
      'limits.maxRequestBodyBytes (flag --max-request-body-bytes)',
    ])
      expect(run.stderr).toContain(fragment);
    expect(() => readFileSync(join(temp.dir, 'never', 'tasks.db'))).toThrow();
  });

  it('config print shows the effective values with their sources and masks secrets', async () => {
    const file = join(temp.dir, 'print.json');
    writeFileSync(file, JSON.stringify({ store: 'postgres://app:hunter2-password@db.internal:5432/tasks', limits: { maxRequestBodyBytes: 1024 } }));
    const { cli } = cliRunner({ ...process.env, MCP_TASKS_SECRET: 'a-secret-of-at-least-16-bytes', MCP_TASKS_CONFIG: file });
    const run = await cli(['config', 'print', '--json', '--session-idle-ms', '5000']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).not.toContain('hunter2');
    expect(run.stdout).not.toContain('a-secret-of-at-least');
    const printed = JSON.parse(run.stdout) as { configFile: string; settings: Record<string, { value: unknown; source: string }> };
    expect(printed.configFile).toBe(file);
    expect(printed.settings.store).toEqual({ value: 'postgres://app:***@db.internal:5432/tasks', source: `file ${file}` });
    expect(printed.settings.secret).toEqual({ value: '***', source: 'env MCP_TASKS_SECRET' });
    expect(printed.settings['limits.maxRequestBodyBytes']).toEqual({ value: 1024, source: `file ${file}` });
    expect(printed.settings['limits.sessionIdleMs']).toEqual({ value: 5000, source: 'flag --session-idle-ms' });
    expect(printed.settings['limits.leaseMs']).toEqual({ value: DEFAULT_LIMITS.leaseMs, source: 'default' });
    const table = await cli(['config', 'print']);
    expect(table.stdout).toMatch(/limits\.maxRequestBodyBytes\s+1024\s+\(file /);
    expect(table.stdout).not.toContain('hunter2');
  });
});
