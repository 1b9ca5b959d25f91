import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { countingTools } from '../client/support.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { ensureBuilt, MAIN } from './support.js';

// The requestor's journal on a disk that is full: the call goes on (its journal is evidence, best effort) and says
// the task was not recorded, and nothing is left behind that holds the next command — an empty lock file reads as
// one being written and would hold every journal write for seconds. HOME is a full 12 KiB tmpfs in a mount
// namespace of the command's own (`unshare -m`), never this machine's.

describe('the requestor journal on a full disk', () => {
  const temp = makeTempDir('mcp-tasks-journal-full-');
  const { tools, total } = countingTools();
  let server: RunningTasksServer;
  beforeAll(async () => {
    ensureBuilt();
    server = await startTasksServer({ tools });
  });
  afterAll(async () => {
    await server?.close();
    temp.remove();
  });

  it('a call still runs once and warns that its task was not recorded; no lock file is left and no file handle leaks', async () => {
    const home = join(temp.dir, 'home');
    mkdirSync(home);
    const node = JSON.stringify(process.execPath);
    const call = (label: string) =>
      `${node} ${JSON.stringify(MAIN)} call echo_args --args '{"label":"${label}"}' --url ${server.url} --protocol 2025-11-25 --task required; echo "exit=$?"`;
    const script = [
      'mount -t tmpfs -o size=12k mcp-tasks-test "$0" || exit 99',
      'mkdir -p "$0/.mcp-tasks" && (dd if=/dev/zero of="$0/fill" bs=1k count=64 2>/dev/null; true)',
      call('first'),
      call('second'),
      'printf "left=%s\\n" "$(ls -A "$0/.mcp-tasks" | tr "\\n" " ")"',
    ].join('\n');
    // Spawned, not spawnSync: the server answering it runs in this process.
    const child = spawn('unshare', ['-m', 'sh', '-c', script, home], {
      env: { ...process.env, HOME: home, MCP_TASKS_CLIENT_STATE: '', MCP_TASKS_URL: '', MCP_TASKS_TOKEN: '' },
    });
    const run = { status: null as number | null, stdout: '', stderr: '' };
    child.stdout.on('data', (chunk: Buffer) => (run.stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (run.stderr += chunk.toString()));
    run.status = await new Promise<number | null>((resolveExit) => child.on('close', resolveExit));
    expect(run.status, `unshare -m and a tmpfs mount are needed here (root): ${run.stderr}`).toBe(0);
    expect(run.stdout.match(/exit=\d+/g)).toEqual(['exit=0', 'exit=0']);
    expect(total()).toBe(2);
    expect(run.stderr.match(/mcp-tasks: warning: could not record the task in /g)).toHaveLength(2);
    expect(run.stdout, run.stdout).toMatch(/^left=$/m);
    expect(run.stderr).not.toContain('Closing file descriptor');
    expect(run.stderr).not.toContain('is locked by another process');
  }, 60_000);
});
