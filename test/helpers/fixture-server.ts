import { type ChildProcess, spawn } from 'node:child_process';

import { afterAll, beforeAll } from 'vitest';

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

/**
 * {@link startFixtureServer} for the test file: started before its tests (`beforeAll`), killed after them; `url()`
 * is its URL once started.
 */
export function useFixtureServer(fixture: string, env: NodeJS.ProcessEnv = {}): { url: () => string } {
  let running: { server: ChildProcess; url: string } | undefined;
  beforeAll(async () => {
    running = await startFixtureServer(fixture, env);
  });
  afterAll(() => {
    running?.server.kill();
  });
  return {
    url: () => {
      if (!running) throw new Error(`${fixture} is not started`);
      return running.url;
    },
  };
}
