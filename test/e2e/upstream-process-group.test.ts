/**
 * Issue 28: a stdio upstream started through a launcher (`sh -c …`, as `npx …` does) is ended with everything the
 * launcher started — the server is the launcher's child, and a signal to the launcher alone leaves it running. Real
 * processes: the connection itself, and `serve` at shutdown; the server (test/fixtures/upstream-sizes.mjs with
 * `--linger`) ignores the end of its input, so only a signal ends it. The failed start through a launcher is in
 * test/cli/upstream-start.test.ts.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { silentLogger } from '../../src/core/logger.js';
import { UpstreamConnection } from '../../src/upstream/connection.js';
import { parseUpstreamSpec } from '../../src/upstream/spec.js';
import { ensureBuilt, MAIN } from '../cli/support.js';
import { goneWithin, parentOf, stillRunning } from '../helpers/process-alive.js';
import { startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { shellSpec } from '../helpers/upstream-servers.js';

const SIZES = join(import.meta.dirname, '..', 'fixtures', 'upstream-sizes.mjs');

describe('a stdio upstream started through sh -c (issue 28)', () => {
  const temp = makeTempDir('mcp-tasks-upstream-group-');
  /** Servers a failing test may have left running, killed at the end. */
  const servers: number[] = [];
  const lingering = (name: string): { spec: string; pid: () => number } => {
    const pidFile = join(temp.dir, `${name}.pid`);
    return {
      spec: shellSpec(name, [process.execPath, SIZES, '--linger', '--pid-file', pidFile]),
      pid: () => {
        const pid = Number(readFileSync(pidFile, 'utf8'));
        servers.push(pid);
        return pid;
      },
    };
  };

  beforeAll(() => ensureBuilt());
  afterAll(async () => {
    for (const pid of servers) await goneWithin(pid, 0);
    temp.remove();
  });

  it('close() after a successful start ends the server the shell started, not only the shell', async () => {
    const upstream = lingering('sizes');
    const connection = new UpstreamConnection({
      spec: parseUpstreamSpec(upstream.spec),
      logger: silentLogger,
      clientVersion: '0.0.0',
      maxResultBytes: 1024 * 1024,
      startTimeoutMs: 20_000,
    });
    try {
      const tools = await connection.start();
      expect(tools.map((tool) => tool.name)).toContain('wait');
      const server = upstream.pid();
      // The server really is the shell's child: the case a signal to our own child alone does not reach.
      expect(parentOf(server)).toBe(connection.childPid());
      await connection.close();
      expect(await goneWithin(server)).toBe(true);
    } finally {
      await connection.close();
    }
  });

  it('serve stopped with SIGTERM ends the server its upstream shell started', async () => {
    const upstream = lingering('served');
    const served = await startServerProcess(join(temp.dir, 'serve'), ['--no-builtins', '--upstream', upstream.spec]);
    const server = upstream.pid();
    expect(await stillRunning(server, 0)).toBe(true);
    // serve handles SIGTERM from before its banner on (the banner is what startServerProcess waits for).
    await served.stop();
    expect(served.child.exitCode).toBe(0);
    expect(await goneWithin(server)).toBe(true);
  });

  it('serve --stdio stopped with SIGTERM as soon as its banner is out drains and ends its upstream server too', async () => {
    const upstream = lingering('stdio');
    const child = spawn(process.execPath, [MAIN, 'serve', '--stdio', '--no-builtins', '--data-dir', join(temp.dir, 'stdio'), '--upstream', upstream.spec], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    await new Promise<void>((resolve, reject) => {
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
        if (stderr.includes('serving MCP on stdio')) resolve();
      });
      child.on('exit', () => reject(new Error(`serve --stdio exited: ${stderr}`)));
    });
    const server = upstream.pid();
    child.kill('SIGTERM');
    const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
    // Without a handler the signal ends the process (code null): no drain, the upstream left behind.
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(stderr).toContain('draining before exit');
    expect(await goneWithin(server)).toBe(true);
  });
});
