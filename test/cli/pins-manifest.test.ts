import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { makeTempDir } from '../helpers/temp-dir.js';
import { cliRunner, ensureBuilt } from './support.js';

const ROOT = resolve(import.meta.dirname, '../..');
const installed = (name: string): string => (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;

describe('pins and the manifest (issue 15 item 2)', () => {
  const temp = makeTempDir('mcp-tasks-pins-');
  const { cli, start } = cliRunner({ ...process.env, MCP_TASKS_CLIENT_STATE: join(temp.dir, 'journal.json') });
  const args = (config: string): string[] => [
    'serve',
    '--config',
    config,
    '--port',
    '0',
    '--data-dir',
    join(temp.dir, 'data'),
    '--no-builtins',
    '--fixtures',
    'conformance',
    '--log-level',
    'error',
  ];
  const writeConfig = (name: string, pins: Record<string, unknown>): string => {
    const path = join(temp.dir, name);
    writeFileSync(path, JSON.stringify({ pins }));
    return path;
  };
  beforeAll(() => ensureBuilt());
  afterAll(() => temp.remove());

  /** Start serve; resolve with its stderr once it serves, or with its exit when it refuses. */
  async function startOrRefuse(extra: string[]): Promise<{ served: boolean; code: number | null; stderr: string }> {
    const running = start(extra);
    try {
      await running.stderrLine(/serving http:/);
      running.child.kill('SIGTERM');
      const done = await running.done;
      return { served: true, code: done.code, stderr: done.stderr };
    } catch {
      const done = await running.done;
      return { served: false, code: done.code, stderr: done.stderr };
    }
  }

  it('an SDK version that differs from the installed one refuses start (exit 64, every mismatch listed) unless --allow-unpinned', async () => {
    const config = writeConfig('mismatch.json', {
      sdk: { '@modelcontextprotocol/server': '0.0.1', 'not-a-package-anyone-installed': '1.0.0' },
      concurrency: 3,
    });
    const refused = await startOrRefuse(args(config));
    expect(refused.served).toBe(false);
    expect(refused.code).toBe(64);
    expect(refused.stderr).toContain(
      `pins.sdk @modelcontextprotocol/server@0.0.1 ≠ installed @modelcontextprotocol/server@${installed('@modelcontextprotocol/server')}`,
    );
    expect(refused.stderr).toContain('not-a-package-anyone-installed@1.0.0 ≠ installed (not installed)');
    expect(refused.stderr).toContain('pins.concurrency 3 ≠ limits.concurrency 16');
    const overridden = await startOrRefuse([...args(config), '--allow-unpinned']);
    expect(overridden.served, overridden.stderr).toBe(true);
  }, 60_000);

  it('pins that hold (installed SDK versions, served protocol versions, registered tools, limits) start normally', async () => {
    const manifest = await cli(['manifest', '--json', '--no-builtins', '--fixtures', 'conformance']);
    const tools = (JSON.parse(manifest.stdout) as Array<{ tools: Array<{ name: string }> }>)[0]?.tools.map((tool) => tool.name) ?? [];
    expect(tools.length).toBeGreaterThan(0);
    const config = writeConfig('holds.json', {
      sdk: {
        '@modelcontextprotocol/server': installed('@modelcontextprotocol/server'),
        '@modelcontextprotocol/client': installed('@modelcontextprotocol/client'),
      },
      protocolVersions: ['2025-11-25', '2026-07-28'],
      allowedTools: tools,
      concurrency: 16,
      maxTtlMs: 86_400_000,
      owner: 'platform-team',
      contact: 'oncall@example.com',
    });
    const started = await startOrRefuse(args(config));
    expect(started.served, started.stderr).toBe(true);
    // One tool fewer in the pin: refused, naming the tool.
    const fewer = writeConfig('fewer.json', { allowedTools: tools.slice(1) });
    const refused = await startOrRefuse(args(fewer));
    expect(refused.code).toBe(64);
    expect(refused.stderr).toContain(`not pinned: ${tools[0]}`);
  }, 60_000);

  it('`manifest --json` equals what `inspect --json` reads from a live server with the same configuration (session evidence aside)', async () => {
    const printed = await cli(['manifest', '--json', '--no-builtins', '--fixtures', 'conformance']);
    expect(printed.code, printed.stderr).toBe(0);
    const manifests = JSON.parse(printed.stdout) as Array<Record<string, unknown>>;
    expect(manifests.map((manifest) => manifest.generation)).toEqual(['v1', 'v2']);
    const server = start(['serve', '--port', '0', '--data-dir', join(temp.dir, 'live'), '--no-builtins', '--fixtures', 'conformance', '--log-level', 'error']);
    try {
      const url = `http://127.0.0.1:${(await server.stderrLine(/serving http:\/\/127\.0\.0\.1:(\d+)\/mcp/))[1]}/mcp`;
      for (const [index, protocol] of ['2025-11-25', '2026-07-28'].entries()) {
        const inspected = await cli(['inspect', '--url', url, '--protocol', protocol, '--json']);
        expect(inspected.code, inspected.stderr).toBe(0);
        const live = JSON.parse(inspected.stdout) as Record<string, unknown>;
        const { session: _liveSession, ...liveRest } = live;
        const { session: _printedSession, ...printedRest } = manifests[index] as Record<string, unknown>;
        expect(printedRest).toEqual(liveRest);
      }
    } finally {
      server.child.kill('SIGKILL');
    }
  }, 60_000);
});
