/**
 * `mcp-tasks doctor --check-upstreams` (issue 28): the configured upstreams started as `serve` starts them, one line
 * each — with the real `@modelcontextprotocol/server-everything` over stdio behind the recording tap, and an upstream
 * that exits at once.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { makeTempDir } from '../helpers/temp-dir.js';
import { everythingStdio, stdioSpec, tapEntries } from '../helpers/upstream-servers.js';
import { ensureBuilt, MAIN } from './support.js';

const temp = makeTempDir('mcp-tasks-doctor-upstreams-');
beforeAll(() => ensureBuilt());
afterAll(() => temp.remove());

function doctor(args: string[]) {
  const dataDir = join(temp.dir, 'data');
  mkdirSync(dataDir, { recursive: true });
  const result = spawnSync(process.execPath, [MAIN, 'doctor', '--data-dir', dataDir, ...args], { encoding: 'utf8', timeout: 60_000, cwd: temp.dir });
  return {
    status: result.status,
    upstream: result.stdout.split('\n').filter((line) => /^(ok {2}|FAIL) {2}upstream/.test(line)),
    all: result.stdout + result.stderr,
  };
}

describe('doctor --check-upstreams (issue 28)', () => {
  it('an upstream that starts: ok with the tools it lists; its stdio child is ended afterwards', () => {
    const tap = join(temp.dir, 'everything.tap');
    const run = doctor(['--check-upstreams', '--upstream', everythingStdio('everything', tap)]);
    expect(run.status, run.all).toBe(0);
    expect(run.upstream).toHaveLength(1);
    expect(run.upstream[0]).toMatch(/^ok {4}upstream\s+everything \(stdio: .+\): started in \d+ ms, \d+ tools listed$/);
    expect(Number(/(\d+) tools listed/.exec(run.upstream[0] ?? '')?.[1])).toBeGreaterThan(5);
    // The child saw its input close: doctor left nothing running.
    expect(tapEntries(tap).some((entry) => entry.dir === 'eof' || entry.dir === 'exit')).toBe(true);
  });

  it('an upstream that cannot start: FAIL naming it and why, exit 1; upstreams of the configuration file are read', () => {
    const config = join(temp.dir, 'mcp-tasks.json');
    writeFileSync(config, JSON.stringify({ upstreams: [stdioSpec('broken', [process.execPath, '-e', 'process.exit(3)'])] }));
    const run = doctor(['--check-upstreams', '--config', config]);
    expect(run.status).toBe(1);
    expect(run.upstream).toEqual([expect.stringMatching(/^FAIL {2}upstream\s+cannot start upstream broken \(stdio: .+\): /)]);
  });

  it('control: without --check-upstreams no upstream is started or reported', () => {
    const tap = join(temp.dir, 'unused.tap');
    const run = doctor(['--upstream', everythingStdio('everything', tap)]);
    expect(run.upstream).toEqual([]);
    expect(tapEntries(tap)).toEqual([]);
  });
});
