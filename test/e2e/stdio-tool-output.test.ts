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

/** Run one stdio session: initialize, initialized, `prints` with `lines`; the process's stdout and stderr. */
async function session(executor: string, lines: number): Promise<{ stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    [MAIN, 'serve', '--stdio', '--no-builtins', '--tools', TOOLS, '--executor', executor, '--data-dir', join(temp.dir, executor), '--log-level', 'warn'],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
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
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'prints', arguments: { lines } } });
  await answered(2);
  child.stdin.end();
  await exited;
  return { stdout, stderr };
}

describe('serve --stdio: what tools print stays off the protocol channel', () => {
  for (const executor of ['isolated', 'in-process']) {
    it(`${executor} executor: every stdout line is a JSON-RPC message; the tool's and its module's prints are on stderr`, async () => {
      const { stdout, stderr } = await session(executor, 50);
      const lines = stdout.split('\n').filter((line) => line !== '');
      for (const line of lines) expect(JSON.parse(line), line).toMatchObject({ jsonrpc: '2.0' });
      expect(lines.find((line) => line.includes('"id":2'))).toContain('printed 100');
      // Control: the prints happened, and went to stderr.
      expect(stderr).toContain('tool console.log 49');
      expect(stderr).toContain('tool stdout.write 49');
      expect(stderr).toContain('stdout-tools: loaded (console.log at import)');
    }, 60_000);
  }
});
