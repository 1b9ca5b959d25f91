/**
 * Deleting exactly the confirmed files of a cleanup plan, each only when it is still the file that was listed.
 */
import { lstat, realpath, unlink } from 'node:fs/promises';
import path from 'node:path';

import type { Confinement } from '../roots.js';
import type { Candidate } from './plan.js';

/** Why a listed file was not deleted. */
export type SkipReason = 'missing' | 'changed' | 'moved outside the writable roots' | `failed: ${string}`;

/** What a deletion did, file by file. */
export type DeletionReport = {
  deleted: Array<{ path: string; size: number }>;
  skipped: Array<{ path: string; reason: SkipReason }>;
  /** Sum of the deleted files' sizes in bytes. */
  freedBytes: number;
};

/** Why `remove` of {@link DeleteOptions.through} did not delete a file (nothing was deleted). */
export class Skipped extends Error {
  override readonly name = 'Skipped';
  constructor(readonly reason: SkipReason) {
    super(reason);
  }
}

/** Options of {@link deleteConfirmed}. */
export interface DeleteOptions {
  /** The writable roots and the denied paths. */
  confinement: Confinement;
  signal: AbortSignal;
  onProgress(done: number, total: number): void;
  /**
   * How each deletion is carried out: `remove` rechecks and unlinks the file, throwing {@link Skipped} when it did
   * not. `cleanup_logs` passes each one through the operation ledger (`ctx.operation`). @defaultValue `remove()`
   */
  through?(candidate: Candidate, remove: () => Promise<void>): Promise<void>;
}

/**
 * Delete the listed files. Each is checked right before: it must still exist as a regular file with the listed
 * size and modification time, and its directory must still resolve inside the writable roots (a directory
 * swapped for a symlink is not followed); otherwise it is skipped and reported. Nothing else is touched.
 * @throws the signal's reason when aborted between two files (those already deleted stay deleted).
 */
export async function deleteConfirmed(candidates: readonly Candidate[], options: DeleteOptions): Promise<DeletionReport> {
  const report: DeletionReport = { deleted: [], skipped: [], freedBytes: 0 };
  for (const [index, candidate] of candidates.entries()) {
    options.signal.throwIfAborted();
    const remove = async (): Promise<void> => {
      const reason = await recheck(candidate, options.confinement);
      if (reason) throw new Skipped(reason);
      try {
        await unlink(candidate.path);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        throw new Skipped(code === 'ENOENT' ? 'missing' : `failed: ${code ?? (error as Error).message}`);
      }
    };
    try {
      await (options.through ? options.through(candidate, remove) : remove());
      report.deleted.push({ path: candidate.path, size: candidate.size });
      report.freedBytes += candidate.size;
    } catch (error) {
      if (!(error instanceof Skipped)) throw error;
      report.skipped.push({ path: candidate.path, reason: error.reason });
    }
    options.onProgress(index + 1, candidates.length);
  }
  return report;
}

/** Why the file is no longer the one that was listed, or `undefined` when it still is. */
async function recheck(candidate: Candidate, confinement: Confinement): Promise<SkipReason | undefined> {
  const stats = await lstat(candidate.path).catch(() => null);
  if (!stats) return 'missing';
  if (!stats.isFile() || stats.size !== candidate.size || stats.mtimeMs !== candidate.mtimeMs) return 'changed';
  const directory = await realpath(path.dirname(candidate.path)).catch(() => null);
  const denied = directory === null || confinement.isDenied(directory) || confinement.isDeniedFile(stats);
  if (denied || path.join(directory, path.basename(candidate.path)) !== candidate.path || !confinement.allows(candidate.path)) {
    return 'moved outside the writable roots';
  }
  return undefined;
}
