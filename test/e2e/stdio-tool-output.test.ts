/**
 * `serve --stdio`: stdout carries JSON-RPC messages only (stop 43's newcomer: a tool's console.log and
 * process.stdout.write landed among the answers, and a client parsing every line fails). What a tool prints — in a
 * worker thread (the default isolated executor) or in process, and at its module's import — goes to stderr instead.
 */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ensureBuilt, MAIN } from '../cli/support.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const TOOLS = resolve(import.meta.dirname, '../fixtures/stdout-tools.mjs');
const temp = makeTempDir('mcp-tasks-stdio-output-');
beforeAll(() => ensureBuilt());
afterAll(() => temp.remove());

/**
 * Run one stdio session: initialize, initialized, `prints` with `lines`, then stdin closed; the process's stdout,
 * stderr and exit code. `closeStderr`: the client closes its end of the server's stderr after initialize.
 */
async function session(executor: string, lines: number, closeStderr = false): Promise<{ stdout: string; stderr: string; code: number | null }> {
  const child = spawn(
    process.execPath,
    [MAIN, 'serve', '--stdio', '--no-builtins', '--tools', TOOLS, '--executor', executor, '--data-dir', join(temp.dir, executor), '--log-level', 'warn'],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<number | null>((resolveExit) => child.once('exit', (code) => resolveExit(code)));
  const send = (message: object): boolean => child.stdin.write(`${JSON.stringify(message)}\n`);
  const answered = async (id: number): Promise<void> => {
    const deadline = Date.now() + 30_000;
    while (!stdout.split('\n').some((line) => line.includes(`"id":${id}`))) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`no answer ${id}; stdout:\n${stdout}\nstderr:\n${stderr}`);
      await new Promise((wake) => setTimeout(wake, 20));
    }
  };
  send({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'stdout-test', version: '1' } },
  });
  await answered(1);
  if (closeStderr) child.stderr.destroy();
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'prints', arguments: { lines } } });
  await answered(2);
  // A worker thread's stdout reaches the process asynchronously (Node forwards it through a port), so its last print
  // can come after the answer: wait for it before ending the session (a drain that ends the thread drops what is
  // still in flight — stop 43's CI). Not when the client closed stderr: nothing arrives there.
  const deadline = Date.now() + 10_000;
  while (!closeStderr && !stderr.includes('tool named stdout import') && Date.now() < deadline) await new Promise((wake) => setTimeout(wake, 20));
  child.stdin.end();
  return { stdout, stderr, code: await exited };
}

describe('serve --stdio: what tools print stays off the protocol channel', () => {
  for (const executor of ['isolated', 'in-process']) {
    it(`${executor} executor: every stdout line is a JSON-RPC message; the tool's and its module's prints are on stderr`, async () => {
      const { stdout, stderr, code } = await session(executor, 50);
      expect(code).toBe(0);
      const lines = stdout.split('\n').filter((line) => line !== '');
      for (const line of lines) expect(JSON.parse(line), line).toMatchObject({ jsonrpc: '2.0' });
      expect(lines.find((line) => line.includes('"id":2'))).toContain('printed 100');
      // Control: the prints happened, and went to stderr.
      expect(stderr).toContain('tool console.log 49');
      expect(stderr).toContain('tool stdout.write 49');
      expect(stderr).toContain('tool named stdout import');
      expect(stderr).toContain('stdout-tools: loaded (console.log at import)');
    }, 60_000);

    it(`${executor} executor: a client that closed its end of stderr still gets its answers; the process does not die of EPIPE`, async () => {
      const { stdout, code } = await session(executor, 50, true);
      expect(stdout.split('\n').find((line) => line.includes('"id":2'))).toContain('printed 100');
      expect(code).toBe(0);
    }, 60_000);
  }
});
