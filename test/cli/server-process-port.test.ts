/**
 * The test helper's retry on a port taken between `freePort()` and the bind (stop 42's CI): it recognises the
 * failure by serve's own message, so that message must keep matching. Control: a start on a port given by the
 * caller is not retried — it fails with that message.
 */
import { createServer } from 'node:net';
import { join } from 'node:path';

import { beforeAll, expect, it } from 'vitest';

import { freePort, PORT_TAKEN, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { ensureBuilt } from './support.js';

const temp = makeTempDir('mcp-tasks-port-');
beforeAll(() => ensureBuilt());

it('a busy port given by the caller fails with the message the helper retries on', async () => {
  const port = await freePort();
  const blocker = createServer().listen(port, '127.0.0.1');
  await new Promise((resolve) => blocker.once('listening', resolve));
  try {
    const message = await startServerProcess(join(temp.dir, 'data'), [], {}, port).then(
      () => 'started',
      (error: Error) => error.message,
    );
    expect(message).toMatch(PORT_TAKEN);
  } finally {
    blocker.close();
    temp.remove();
  }
});
