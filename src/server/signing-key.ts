import { randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import { chmodSync, constants, copyFileSync, existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import type { ServerSecretStore } from '../core/session-store.js';

/**
 * The server secret that signs cursors (and, later, MRTR `requestState`): `MCP_TASKS_SECRET` when set, otherwise a
 * 32-byte random value generated once into `<dataDir>/secret` with mode 0600 and reused by every later start.
 */
export function loadServerSecret(dataDir: string, env: NodeJS.ProcessEnv = process.env): Buffer {
  const fromEnv = env.MCP_TASKS_SECRET;
  if (fromEnv && fromEnv.length > 0) return Buffer.from(fromEnv, 'utf8');
  const path = join(dataDir, 'secret');
  if (existsSync(path)) return readSecret(path);
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32);
  // Written whole under a name of its own, then linked into place: a process that starts beside this one reads the
  // file only complete. (Created in place, it was empty between its creation and its write, and a second process
  // read that as an empty secret, disagreed with the first and refused to start.) `link` fails if another process
  // linked first; then we read theirs.
  const temporary = join(dataDir, `.secret-${process.pid}-${randomBytes(6).toString('hex')}`);
  writeFileSync(temporary, `${secret.toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    chmodSync(temporary, 0o600);
    placeOnce(temporary, path);
    return secret;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return readSecret(path);
  } finally {
    rmSync(temporary, { force: true });
  }
}

/**
 * Put `from`'s file at `to` unless `to` exists (then `EEXIST`): a hard link, whole at once; on a filesystem without
 * hard links, an exclusive copy, whose brief empty state {@link readSecret} waits out.
 */
function placeOnce(from: string, to: string): void {
  try {
    linkSync(from, to);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw error;
    copyFileSync(from, to, constants.COPYFILE_EXCL);
  }
}

/** Longest wait for a secret file another process is still writing (an older version wrote it in place), in ms. */
const SECRET_WRITE_WAIT_MS = 2_000;

/**
 * The secret in `path`. An empty file is one still being written (by a version that wrote it in place) and is read
 * again for up to {@link SECRET_WRITE_WAIT_MS}.
 * @throws Error when it stays empty: starting with an empty secret would sign nothing.
 */
function readSecret(path: string): Buffer {
  const deadline = Date.now() + SECRET_WRITE_WAIT_MS;
  for (;;) {
    const secret = Buffer.from(readFileSync(path, 'utf8').trim(), 'base64url');
    if (secret.length > 0) return secret;
    if (Date.now() > deadline)
      throw new Error(`the server secret file ${path} is empty: delete it (a new one is made at the next start) or set MCP_TASKS_SECRET`);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
  }
}

/** Where the secret of {@link agreeOnServerSecret} came from (shown at start). */
export type ServerSecretSource = 'env' | 'data-dir' | 'store';

/** Raised when this instance's secret is not the one the store's other instances use. */
export class SecretMismatchError extends Error {
  override readonly name = 'SecretMismatchError';
}

const SCRYPT_BYTES = 32;

function digest(secret: Buffer, salt: string): Buffer {
  return scryptSync(secret, Buffer.from(salt, 'base64url'), SCRYPT_BYTES);
}

/**
 * The server secret every instance of one store must share (issue 11 item 5), agreed through the store's
 * {@link ServerSecretStore} record; the first instance to start writes it:
 * - `MCP_TASKS_SECRET` set (any store), or SQLite without it (`<dataDir>/secret`, see {@link loadServerSecret}):
 *   the store keeps a salted scrypt digest (`verifier` mode), never the secret; an instance whose secret does not
 *   match it is refused.
 * - PostgreSQL without `MCP_TASKS_SECRET`: the secret is kept in the database (`kept` mode, random 32 bytes), readable
 *   by whoever can read `mcp_tasks.server_secret`; every instance uses it. An instance that then brings
 *   `MCP_TASKS_SECRET` must bring that same value.
 * @throws SecretMismatchError naming what to fix, when this instance's secret differs from the recorded one.
 */
export async function agreeOnServerSecret(
  store: ServerSecretStore,
  options: { dataDir: string; keptInStore: boolean; env?: NodeJS.ProcessEnv; now?: number },
): Promise<{ secret: Buffer; source: ServerSecretSource }> {
  const env = options.env ?? process.env;
  const fromEnv = env.MCP_TASKS_SECRET;
  const now = options.now ?? Date.now();
  if ((fromEnv === undefined || fromEnv.length === 0) && options.keptInStore) {
    const record = await store.claimServerSecret({ mode: 'kept', secret: randomBytes(32).toString('base64url'), createdAt: now });
    if (record.mode === 'kept') return { secret: Buffer.from(record.secret, 'base64url'), source: 'store' };
    throw new SecretMismatchError('the instances of this store sign with MCP_TASKS_SECRET (the store keeps its digest): set the same MCP_TASKS_SECRET here');
  }
  const source: ServerSecretSource = fromEnv !== undefined && fromEnv.length > 0 ? 'env' : 'data-dir';
  const secret = loadServerSecret(options.dataDir, env);
  // scrypt costs ~80–120 ms of CPU: made once per start — our candidate only when the store has no record yet (the
  // first start), else only the digest with the stored salt.
  let ours: { salt: string; digest: Buffer } | undefined;
  const record = await store.claimServerSecret(() => {
    const salt = randomBytes(16).toString('base64url');
    ours = { salt, digest: digest(secret, salt) };
    return { mode: 'verifier', salt, verifier: ours.digest.toString('base64url'), createdAt: now };
  });
  const matches =
    record.mode === 'kept'
      ? safeEqual(Buffer.from(record.secret, 'base64url'), secret)
      : safeEqual(Buffer.from(record.verifier, 'base64url'), ours?.salt === record.salt ? ours.digest : digest(secret, record.salt));
  if (!matches) {
    throw new SecretMismatchError(
      source === 'env'
        ? 'MCP_TASKS_SECRET differs from the secret the other instances of this store use: give every instance the same MCP_TASKS_SECRET'
        : `the secret in ${join(options.dataDir, 'secret')} differs from the one the other instances of this store use: set the same MCP_TASKS_SECRET on every instance (or share the data directory)`,
    );
  }
  return record.mode === 'kept' ? { secret: Buffer.from(record.secret, 'base64url'), source } : { secret, source };
}

/**
 * Whether `secret` is the one a `verifier` record was made of (its salted scrypt digest), as a start would judge it;
 * for `doctor`, which checks this host's secret without starting anything. Costs one scrypt (~100 ms of CPU).
 */
export function secretMatchesVerifier(secret: Buffer, record: { salt: string; verifier: string }): boolean {
  return safeEqual(Buffer.from(record.verifier, 'base64url'), digest(secret, record.salt));
}

function safeEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
