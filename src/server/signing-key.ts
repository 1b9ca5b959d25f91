import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The server secret that signs cursors (and, later, MRTR `requestState`): `MCP_TASKS_SECRET` when set, otherwise a
 * 32-byte random value generated once into `<dataDir>/secret` with mode 0600 and reused by every later start.
 */
export function loadServerSecret(dataDir: string, env: NodeJS.ProcessEnv = process.env): Buffer {
  const fromEnv = env.MCP_TASKS_SECRET;
  if (fromEnv && fromEnv.length > 0) return Buffer.from(fromEnv, 'utf8');
  const path = join(dataDir, 'secret');
  try {
    return Buffer.from(readFileSync(path, 'utf8').trim(), 'base64url');
  } catch {
    mkdirSync(dataDir, { recursive: true });
    const secret = randomBytes(32);
    try {
      // `wx` fails if another process created it first; then we read theirs.
      writeFileSync(path, `${secret.toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
      chmodSync(path, 0o600);
      return secret;
    } catch {
      return Buffer.from(readFileSync(path, 'utf8').trim(), 'base64url');
    }
  }
}
