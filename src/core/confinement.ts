/**
 * Path confinement as data: where tools may touch the file system. A tool may read (or, for writable roots,
 * delete) below its roots, except below a denied path. Denied paths are the server's own state — the data
 * directory, the store files, the token file — so that no root, glob or symlink can hand a tool the signing
 * secret or other owners' tasks. Both lists travel together from the settings to every tool context (and to any
 * process that runs tools), and the checks in `tools/roots.ts` enforce them after `realpath`.
 */
import path from 'node:path';

import { isPathInside } from './path-inside.js';

/** Where tools may touch the file system: below a root and not below a denied path. */
export interface PathConfinement {
  /** Directories the operator allows tools to read (absolute, symlinks resolved). */
  readonly roots: readonly string[];
  /**
   * Files and directories no tool may read or delete, whatever the roots (absolute). They are compared both as
   * given and after `realpath`, and by device and inode, so a symlink, `..`, a hard link or a bind mount does
   * not reach them either.
   */
  readonly deniedPaths: readonly string[];
}

/** A path holding server state, and what it is (for the start-up log). */
export interface ServerStatePath {
  /** Absolute, not resolved (it may not exist yet). */
  path: string;
  /** e.g. `data directory`, `token file`. */
  what: string;
}

/** Where the server keeps its state (the serve settings that name files). */
export interface ServerStateLocations {
  /** `--data-dir`: the store, its WAL/SHM files and the server secret. */
  dataDir: string;
  /** The SQLite database when it lies elsewhere (`MCP_TASKS_STORE`); its `-wal`, `-shm` and `-journal` too. */
  storePath?: string;
  /** `--auth tokens:<file>`. */
  tokenFile?: string;
  /**
   * `--config` / `MCP_TASKS_CONFIG`: it may hold `secret`, `encryptionKey` and a store URL with its password, so it is
   * server state like the token file.
   */
  configFile?: string;
  /** @defaultValue `process.platform` (Linux adds `/proc/self`: the environment holds `MCP_TASKS_SECRET`). */
  platform?: NodeJS.Platform;
}

/** Suffixes SQLite adds to a database path for its side files. */
const SQLITE_SIDE_FILES = ['', '-wal', '-shm', '-journal'];

/**
 * The paths tools must never reach for a server with these settings, derived the same way in every process that
 * runs tools. Relative paths are resolved against the current directory.
 */
export function serverStatePaths(locations: ServerStateLocations): ServerStatePath[] {
  const dataDir = path.resolve(locations.dataDir);
  const paths: ServerStatePath[] = [{ path: dataDir, what: 'data directory' }];
  if (locations.storePath !== undefined) {
    const store = path.resolve(locations.storePath);
    if (!isPathInside(dataDir, store)) {
      paths.push(...SQLITE_SIDE_FILES.map((suffix) => ({ path: `${store}${suffix}`, what: 'task store' })));
    }
  }
  if (locations.tokenFile !== undefined) paths.push({ path: path.resolve(locations.tokenFile), what: 'token file' });
  if (locations.configFile !== undefined) paths.push({ path: path.resolve(locations.configFile), what: 'configuration file' });
  if ((locations.platform ?? process.platform) === 'linux') paths.push({ path: '/proc/self', what: 'process environment and memory' });
  return paths;
}
