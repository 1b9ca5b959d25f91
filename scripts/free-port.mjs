// A free TCP port on 127.0.0.1 (bind port 0, read it, close), for the scripts that start servers.
import { createServer } from 'node:net';

export function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}
