import { resolve } from 'node:path';

import type { Logger } from '../core/logger.js';
import type { TaskStore } from '../core/store.js';
import type { FieldCipher } from '../store/field-cipher.js';
import { openPostgresTaskStore } from '../store/postgres/index.js';
import { openSqliteTaskStore } from '../store/sqlite/index.js';

/** Which backend `serve` uses: a SQLite file (the default) or a PostgreSQL database. */
export type StoreSpec = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

const POSTGRES_URL = /^postgres(ql)?:\/\//i;

/**
 * Resolve the store from `--store`, else `MCP_TASKS_STORE`, else `<dataDir>/tasks.db`. A `postgres://` or
 * `postgresql://` URL selects PostgreSQL; anything else is a SQLite file path (relative to the working directory).
 */
export function resolveStoreSpec(flag: string | undefined, env: string | undefined, dataDir: string): StoreSpec {
  const given = flag ?? (env !== undefined && env.length > 0 ? env : undefined);
  if (given === undefined) return { kind: 'sqlite', path: resolve(dataDir, 'tasks.db') };
  return POSTGRES_URL.test(given) ? { kind: 'postgres', url: given } : { kind: 'sqlite', path: resolve(given) };
}

/** The store as the start-up banner shows it: a file path, or the URL with its password masked. */
export function describeStore(spec: StoreSpec): string {
  if (spec.kind === 'sqlite') return spec.path;
  try {
    const url = new URL(spec.url);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return 'postgres://(unparsable URL)';
  }
}

/**
 * Open the store `spec` names (migrating its schema), encrypting at rest with `encryption`.
 * @throws {StoreError} as the backend's open does.
 */
export async function openStore(spec: StoreSpec, logger: Logger, encryption: FieldCipher): Promise<TaskStore> {
  return spec.kind === 'sqlite' ? openSqliteTaskStore({ path: spec.path, logger, encryption }) : openPostgresTaskStore({ url: spec.url, logger, encryption });
}
