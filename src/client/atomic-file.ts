import { randomBytes } from 'node:crypto';
import { type FileHandle, open, realpath, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * Write a file under `path` only once all of it is written: `fill` writes into a new file next to it (same
 * directory, so the rename cannot cross file systems), which then replaces `path` in one rename. When `fill` fails,
 * the new file is removed and `path` is left as it was — a failed read never leaves half a result under the name
 * the user gave. An existing `path` that is a symbolic link is written through (its target is replaced).
 * @returns what `fill` returned.
 * @throws whatever `fill`, opening, or the rename throws (e.g. `EACCES` for a directory that cannot be written).
 */
export async function writeFileAtomically<T>(path: string, fill: (file: FileHandle) => Promise<T>): Promise<T> {
  const target = await realpath(path).catch(() => path);
  const temporary = join(dirname(target), `.${basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.partial`);
  const file = await open(temporary, 'wx');
  let done = false;
  try {
    const value = await fill(file);
    await file.close();
    await rename(temporary, target);
    done = true;
    return value;
  } finally {
    if (!done) {
      await file.close().catch(() => {});
      await unlink(temporary).catch(() => {});
    }
  }
}
