import { type ChildProcess, spawn } from 'node:child_process';

import { reaped } from './child-reaper.js';

/**
 * Starts the server script `fixture` (one that prints `listening <url>` on stdout once it accepts connections, such
 * as `test/fixtures/hostile-raw-server.mjs`) as a child process, killed with the test file; resolves with its URL.
 * `env` is added to this process's environment for it.
 */
export async function startFixtureServer(fixture: string, env: NodeJS.ProcessEnv = {}): Promise<{ server: ChildProcess; url: string }> {
  const server = reaped(spawn(process.execPath, [fixture], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } }));
  const url = await new Promise<string>((resolveUrl, reject) => {
    let out = '';
    server.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const found = /listening (\S+)\n/.exec(out);
      if (found) resolveUrl(found[1] as string);
    });
    server.once('exit', (code) => reject(new Error(`${fixture} exited ${code}`)));
  });
  return { server, url };
}
