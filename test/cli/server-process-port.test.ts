/**
 * The test helper lets serve choose its port (`--port 0`) and reads the URL from serve's banner, so no other test
 * file's process can take the port between a pick and the bind (stop 42's CI: "port … is already in use", exit 64).
 * Control: that failure, on a busy port given by the caller.
 */
import { createServer } from 'node:net';
import { join } from 'node:path';

import { afterAll, beforeAll, expect, it } from 'vitest';

import { freePort, type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { ensureBuilt } from './support.js';

const temp = makeTempDir('mcp-tasks-port-');
beforeAll(() => ensureBuilt());
afterAll(() => temp.remove());

it('without a port, serve binds one of its choosing (--port 0) and the helper serves the URL its banner names', async () => {
  const [a, b] = await Promise.all([startServerProcess(join(temp.dir, 'a')), startServerProcess(join(temp.dir, 'b'))]);
  let again: ServerProcess | undefined;
  try {
    for (const server of [a, b]) {
      expect(server.child.spawnargs.join(' ')).toContain('serve --port 0 ');
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
      expect(new URL(server.url).port).not.toBe('0');
      expect((await fetch(server.url.replace(/\/mcp$/, '/healthz'))).status).toBe(200);
    }
    expect(a.url).not.toBe(b.url);
    // The restart on the same URL (stop, then start on that port) still works.
    await a.stop();
    again = await startServerProcess(join(temp.dir, 'a'), [], {}, Number(new URL(a.url).port));
    expect(again.url).toBe(a.url);
  } finally {
    await Promise.all([a.stop(), b.stop(), again?.stop()]);
  }
});

it('control: a busy port given by the caller fails to start (exit 64, "already in use") — the race the helper avoids', async () => {
  const port = await freePort();
  const blocker = createServer().listen(port, '127.0.0.1');
  await new Promise((resolve) => blocker.once('listening', resolve));
  try {
    const message = await startServerProcess(join(temp.dir, 'busy'), [], {}, port).then(
      () => 'started',
      (error: Error) => error.message,
    );
    expect(message).toMatch(/exited early \(64\):\nmcp-tasks: port \d+ on \S+ is already in use/);
  } finally {
    blocker.close();
  }
});
