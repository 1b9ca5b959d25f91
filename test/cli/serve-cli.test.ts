import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeTempDir } from '../helpers/temp-dir.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');

function serve(args: string[]): { status: number | null; stderr: string } {
  const temp = makeTempDir();
  try {
    const result = spawnSync(process.execPath, [MAIN, 'serve', '--data-dir', temp.dir, ...args], { encoding: 'utf8', timeout: 20_000 });
    return { status: result.status, stderr: result.stderr };
  } finally {
    temp.remove();
  }
}

describe('mcp-tasks serve start-up checks', () => {
  it('refuses a non-loopback bind without --auth (exit 64) unless --allow-remote-unauthenticated is given', () => {
    const refused = serve(['--host', '0.0.0.0', '--port', '0']);
    expect(refused.status).toBe(64);
    expect(refused.stderr).toMatch(/refusing to listen on 0\.0\.0\.0 without --auth/);
  });

  it('reports invalid settings (runtime limit above the maximum TTL) before serving, as a usage error', () => {
    const invalid = serve(['--port', '0', '--runtime-limit-ms', '7200000', '--max-ttl-ms', '3600000']);
    expect(invalid.status).toBe(64);
    expect(invalid.stderr).toMatch(/runtimeLimitMs \(7200000\) must not exceed maxTtlMs \(3600000\)/);
  });

  it('rejects a malformed --auth spec and an unreadable token file', () => {
    expect(serve(['--port', '0', '--auth', 'oauth:x']).stderr).toMatch(/expected tokens:<file>/);
    const missing = serve(['--port', '0', '--auth', 'tokens:/nonexistent/tokens.json']);
    expect(missing.status).toBe(64);
    expect(missing.stderr).toMatch(/cannot read token file/);
  });
});
