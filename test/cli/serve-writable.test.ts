import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { makeTempDir } from '../helpers/temp-dir.js';
import { cliRunner, ensureBuilt, MAIN } from './support.js';

/** `serve --writable-root`: cleanup_logs exists only with one, and works through the CLI against the real server. */
describe('mcp-tasks serve --writable-root', () => {
  const temp = makeTempDir('mcp-tasks-writable-');
  const env: NodeJS.ProcessEnv = { ...process.env, MCP_TASKS_CLIENT_STATE: join(temp.dir, 'state', 'tasks.json') };
  delete env.MCP_TASKS_URL;
  delete env.MCP_TASKS_TOKEN;
  const { cli } = cliRunner(env);

  /** Start `serve` on a free port; resolves with its URL and banner once it listens. */
  const serve = async (args: string[]): Promise<{ url: string; banner: string; stop(): Promise<void> }> => {
    const child = spawn(process.execPath, [MAIN, 'serve', '--port', '0', '--data-dir', join(temp.dir, `data-${args.length}`), '--log-level', 'warn', ...args], {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let banner = '';
    await new Promise<void>((resolve, reject) => {
      child.stderr.on('data', (chunk: Buffer) => {
        banner += chunk.toString();
        if (banner.includes('  auth:')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${banner}`)));
    });
    const url = banner.match(/serving (http:\S+)/)?.[1] as string;
    return { url, banner, stop: () => new Promise<void>((resolve) => child.once('exit', () => resolve()).kill('SIGTERM')) };
  };

  beforeAll(() => ensureBuilt());
  afterAll(() => temp.remove());

  it('without --writable-root there is no cleanup_logs; a missing directory is a usage error', async () => {
    const server = await serve([]);
    await server.stop();
    expect(server.banner).toContain('  writable: (none)\n');
    expect(server.banner).not.toContain('cleanup_logs');
    const missing = spawnSync(process.execPath, [MAIN, 'serve', '--port', '0', '--data-dir', temp.dir, '--writable-root', join(temp.dir, 'nope')], {
      encoding: 'utf8',
      env,
    });
    expect(missing.status).toBe(64);
    expect(missing.stderr).toContain('--writable-root');
  });

  it('with one, `mcp-tasks call cleanup_logs --answers` deletes the rotated logs it listed', async () => {
    const logs = join(temp.dir, 'logs');
    mkdirSync(logs);
    const old = new Date(Date.now() - 30 * 86_400_000);
    for (const name of ['api.log', 'api.log.1', 'api.log.2.gz']) {
      writeFileSync(join(logs, name), `${name}\n`);
      utimesSync(join(logs, name), old, old);
    }
    const server = await serve(['--writable-root', logs]);
    try {
      expect(server.banner).toMatch(/ {2}tools: {4}.*cleanup_logs/);
      const run = await cli(['call', 'cleanup_logs', '--args', JSON.stringify({ path: logs }), '--answers', '{"confirm": true}', '--url', server.url]);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^Deleted 2 of 2 file\(s\), \d+ B freed\.\n$/);
      expect(run.stderr).toContain('answered input-1 (accept) from --answers');
      expect(readdirSync(logs)).toEqual(['api.log']);
    } finally {
      await server.stop();
    }
  });
});
