/**
 * A reader that stops early (`mcp-tasks tasks | head -2`, found on stop 43's README tour): the command ends with its
 * own exit code and no stack trace, what it had left to print dropped. Control: the same command with stdout read
 * prints its line.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

import { afterAll, beforeAll, expect, it } from 'vitest';

import { makeTempDir } from '../helpers/temp-dir.js';
import { ensureBuilt, MAIN } from './support.js';

const temp = makeTempDir('mcp-tasks-closed-stdout-');
beforeAll(() => ensureBuilt());
afterAll(() => temp.remove());

/** Run `mcp-tasks tasks` on an empty journal; `closeStdout`: the reader closes its end before anything is written. */
function tasks(closeStdout: boolean): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [MAIN, 'tasks'], {
    env: { ...process.env, MCP_TASKS_CLIENT_STATE: join(temp.dir, 'journal.json') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  if (closeStdout) child.stdout.destroy();
  else child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolveRun) => child.once('close', (code) => resolveRun({ code, stdout, stderr })));
}

it('mcp-tasks tasks into a closed pipe: exit 0, nothing on stderr (no unhandled EPIPE)', async () => {
  expect(await tasks(true)).toEqual({ code: 0, stdout: '', stderr: '' });
});

it('control: with its stdout read, it prints its line', async () => {
  const run = await tasks(false);
  expect(run.code).toBe(0);
  expect(run.stdout).toMatch(/^no unfinished tasks in \S+journal\.json\n$/);
});
