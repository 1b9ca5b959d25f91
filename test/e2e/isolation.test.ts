/**
 * Issue 22, end to end: `mcp-tasks serve` (default isolated executor) loads the tools in its warm pool before it
 * serves, and refuses to start when they cannot load in a worker thread.
 */
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureBuilt, MAIN } from '../cli/support.js';
import { freePort } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { spawnSync } from 'node:child_process';

const THREAD_LOAD_TOOLS = resolve(import.meta.dirname, '../fixtures/thread-load-tools.mjs');

describe('isolated execution never takes the server down (issue 22)', () => {
  ensureBuilt();
  const temp = makeTempDir('mcp-tasks-isolation-');
  afterAll(() => temp.remove());

  it('serve refuses to start, with a clear error, when the tool modules fail to load in a worker thread', async () => {
    const port = await freePort();
    const run = spawnSync(process.execPath, [MAIN, 'serve', '--port', String(port), '--data-dir', join(temp.dir, 'refuses'), '--no-builtins', '--tools', THREAD_LOAD_TOOLS], {
      env: { ...process.env, ISOLATION_TEST_LOAD_FAILS: '1' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('cannot start the isolated executor: the tool modules failed to load in a worker thread: Error: this tool module refuses to load in a worker thread');
  }, 60_000);
});
