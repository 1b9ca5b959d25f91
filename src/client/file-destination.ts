/**
 * Where a result written to a path goes: a file that appears only once complete, without ever replacing what is not
 * a plain file. `--output FILE` and `readResultResourceTo(uri, path)` write through it.
 */
import { randomBytes } from 'node:crypto';
import { constants, unlinkSync } from 'node:fs';
import { access, type FileHandle, lstat, open, rename, stat, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { isatty } from 'node:tty';

/** Bytes copied at a time from the spool into a destination that is written in place. */
const COPY_BYTES = 256 * 1024;

/**
 * The scratch files this process has made and not yet removed or renamed (the new file, a spool): a signal handler
 * that is about to exit removes them with {@link removeScratchFilesNow}, as no `finally` runs past `process.exit`.
 */
const scratchFiles = new Set<string>();
/** How many copies into an `in-place` destination are under way (see {@link copyingInPlace}). */
let copies = 0;

/**
 * Create a scratch file (flags such as `wx`/`wx+`: never an existing one) that {@link removeScratchFilesNow} will
 * remove until {@link releaseScratch} says it is gone or renamed.
 */
export async function openScratch(path: string, flags: string, mode: number): Promise<FileHandle> {
  const file = await open(path, flags, mode);
  scratchFiles.add(path);
  return file;
}

/** `path` was removed or renamed into place: no longer this process's to remove. */
export function releaseScratch(path: string): void {
  scratchFiles.delete(path);
}

/** Remove every scratch file of this process now, synchronously: for a signal handler about to exit. */
export function removeScratchFilesNow(): void {
  for (const path of scratchFiles) {
    try {
      unlinkSync(path);
    } catch {
      // Gone already (removed or renamed just before the signal): nothing to do.
    }
  }
  scratchFiles.clear();
}

/**
 * Whether a complete result is being copied into an `in-place` destination now. Such a copy may sit in an `open()`
 * of a FIFO that waits for a reader or a `write()` to a full pipe, in a thread no abort signal reaches: a signal
 * handler then exits at once rather than wait for it.
 */
export function copyingInPlace(): boolean {
  return copies > 0;
}

/**
 * How a path is written:
 * - `replace`: a missing path or a regular file — written to a new file beside it (same directory, so the rename
 *   cannot cross file systems) that replaces it in one rename once complete, so no failure (a full disk midway)
 *   can leave it holding part of a result. An existing file's permission bits are kept, and its owner where this
 *   process may set it (root); a new file gets `0666 & ~umask`, as a shell's `>` gives it. The new file is `0600`
 *   while it is written: a result can hold secrets, and it is never more readable than FILE was. A regular file
 *   with other hard links is replaced too: the other names keep the old contents (its data is worth more than the
 *   link; writing it in place lost both to a failure midway);
 * - `in-place`: anything else (a FIFO, a device such as `/dev/null`, a socket, a symbolic link: see
 *   {@link destinationOf}) and any path under `/dev/` or
 *   `/proc/` (`/dev/stdout` is a link to whatever fd 1 is, and renaming over it would replace the link itself) —
 *   never replaced: the result is first written to a private spool file in the OS temp directory, then copied into
 *   the path opened for writing, as a shell's `>` writes it, so a failed read writes nothing there; a failure of
 *   the copy itself may leave part of the result there ({@link InPlaceWriteError}).
 */
export interface Destination {
  kind: 'replace' | 'in-place';
  /** The path written, as given: never a symbolic link's target resolved here (see {@link destinationOf}). */
  target: string;
  /** `replace` of an existing file: its permission bits and owner, which the new file takes. */
  existing?: { mode: number; uid: number; gid: number };
}

/**
 * Writing into an `in-place` destination failed once it was opened: unlike a failed read (nothing written) or a
 * failed `replace` (the path left as it was), the path may now hold part of the result.
 */
export class InPlaceWriteError extends Error {
  override readonly name = 'InPlaceWriteError';
  /** The file system's error code (`ENOSPC`, `EPIPE`, …), when it gave one. */
  readonly code: string | undefined;
  /** The failed call, as Node's system errors name it: this is a local file error, not one of the read. */
  readonly syscall: string | undefined;

  constructor(
    readonly path: string,
    options: { cause: unknown },
  ) {
    const { code, syscall, message } = options.cause as NodeJS.ErrnoException;
    super(`${path}: ${String(message)}`, options);
    this.code = code;
    this.syscall = syscall;
  }
}

/**
 * How `path` would be written now (see {@link Destination}). A symbolic link is never resolved here and its target
 * never replaced: a rename onto a target resolved in user space would bypass the kernel's `fs.protected_symlinks`
 * (root saving to `/tmp/out`, which another user made a link to `/etc/shadow`, would replace `/etc/shadow`). A link
 * is written through, `in-place`, opened as a shell's `>` opens it, so the kernel follows it under its own rules; a
 * link to nothing is refused, as `>` would create a file wherever it points. Directories on the way are the
 * kernel's to follow, in each open and rename.
 * @throws the file system's errors other than `ENOENT` (e.g. `EACCES` on a directory on the way); `EISDIR` for a
 *   directory (or a link to one); `ENOENT` for a link to nothing.
 */
export async function destinationOf(path: string): Promise<Destination> {
  /** An error with a file system `code`, as the callers of this module branch on it. */
  const pathError = (message: string, code: string): Error => Object.assign(new Error(message), { code });
  const absolute = resolve(path);
  if (absolute.startsWith('/dev/') || absolute.startsWith('/proc/')) {
    // Never renamed onto, but a directory there (/dev/shm) is refused before the call like any other.
    const entry = await stat(path).catch(() => undefined);
    if (entry?.isDirectory()) throw pathError(`${path} is a directory`, 'EISDIR');
    return { kind: 'in-place', target: path };
  }
  const missing = (error: NodeJS.ErrnoException): undefined => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  };
  const entry = await lstat(path).catch(missing);
  if (entry?.isSymbolicLink()) {
    const pointed = await stat(path).catch(missing);
    if (pointed === undefined) throw pathError(`${path} is a symbolic link to a missing file`, 'ENOENT');
    if (pointed.isDirectory()) throw pathError(`${path} is a link to a directory`, 'EISDIR');
    return { kind: 'in-place', target: path };
  }
  if (entry?.isDirectory()) throw pathError(`${path} is a directory`, 'EISDIR');
  if (entry === undefined) return { kind: 'replace', target: path };
  if (!entry.isFile()) return { kind: 'in-place', target: path };
  return { kind: 'replace', target: path, existing: { mode: entry.mode & 0o7777, uid: entry.uid, gid: entry.gid } };
}

/**
 * Write `path` once all of it is written: `fill` writes into a new file (a seekable one, whatever `path` is: see
 * {@link Destination}); when it returns, that file replaces `path` (`replace`) or is copied into it (`in-place`).
 * When `fill` fails, the new file is removed and `path` is left as it was — a failed or aborted read never leaves
 * half a result under the name the user gave, nor anything beside it.
 * @returns what `fill` returned.
 * @param options `signal`: stops the copy into an `in-place` destination between pieces (and while it waits for a
 *   pipe to drain); an `open()` or `write()` the kernel blocks is not interrupted (see {@link copyingInPlace}).
 *   `terminal`: how text is shown when the destination turns out to be a terminal (`--output /dev/tty`, or
 *   `/dev/stdout` on one): the copy is decoded as UTF-8 and written through it, as a result printed to a terminal
 *   is; any other destination gets the bytes as written.
 * @throws whatever `fill`, opening, writing or the rename throws (e.g. `EACCES` for a directory that cannot be
 *   written, `ENOSPC` for a full disk); InPlaceWriteError when the copy into an `in-place` destination fails or is
 *   aborted once begun; the signal's abort error before it.
 */
export async function writeOutputFile<T>(
  path: string,
  fill: (file: FileHandle) => Promise<T>,
  options: { signal?: AbortSignal; terminal?: (text: string) => string } = {},
): Promise<T> {
  const destination = await destinationOf(path);
  const temporary = temporaryPathFor(destination);
  const file = await openScratch(
    temporary,
    destination.kind === 'replace' ? 'wx' : 'wx+',
    destination.kind === 'replace' && !destination.existing ? 0o666 : 0o600,
  );
  let closed = false;
  let renamed = false;
  try {
    const value = await fill(file);
    options.signal?.throwIfAborted();
    if (destination.kind === 'in-place') await copyInto(file, destination.target, path, options);
    else if (destination.existing) await takeOver(file, destination.existing);
    closed = true;
    await file.close();
    if (destination.kind === 'replace') {
      await rename(temporary, destination.target);
      renamed = true;
      releaseScratch(temporary);
    }
    return value;
  } finally {
    if (!closed) await file.close().catch(() => {});
    if (!renamed) {
      await unlink(temporary).catch(() => {});
      releaseScratch(temporary);
    }
  }
}

/**
 * The OS temp directory (`$TMPDIR`) cannot take the scratch file an in-place target (a FIFO, `/dev/stdout`) is
 * written from: named, so that the user fixes `$TMPDIR`, not FILE. `code` is the file system's (`ENOENT`, `ENOSPC`).
 */
export class ScratchDirectoryError extends Error {
  override readonly name = 'ScratchDirectoryError';
  readonly code: string | undefined;
  constructor(
    readonly directory: string,
    cause: NodeJS.ErrnoException,
  ) {
    super(`the temporary directory ${directory} ($TMPDIR) cannot take the scratch file the result is written from (${cause.code ?? cause.message})`, {
      cause,
    });
    this.code = cause.code;
  }
}

/**
 * Whether {@link writeOutputFile} could write `path`, without creating or changing it: an existing path must be
 * writable, and the directory the new file goes to must take one (a file is created there and removed).
 * @throws the file system's error when it could not (its `code`: `EACCES`, `EISDIR`, `ENOENT`, `EROFS`, …).
 */
export async function probeOutputFile(path: string): Promise<void> {
  const destination = await destinationOf(path);
  // access(), not open(): opening a FIFO for writing waits for a reader.
  await access(destination.target, constants.W_OK).catch((error: NodeJS.ErrnoException) => {
    if (!(destination.kind === 'replace' && error.code === 'ENOENT')) throw error;
  });
  const temporary = temporaryPathFor(destination);
  const scratch = await openScratch(temporary, 'wx', 0o600).catch((error: NodeJS.ErrnoException) => {
    // In-place targets are written from a scratch file in the OS temp directory: its problem is not FILE's.
    if (destination.kind === 'in-place') throw new ScratchDirectoryError(dirname(temporary), error);
    throw error;
  });
  await scratch.close();
  await unlink(temporary);
  releaseScratch(temporary);
}

/**
 * A new file's path for writing `path` (suffix e.g. `partial`): beside the target for `replace`, in the OS temp
 * directory for `in-place` (never in `/dev`). Hidden, and unique to this process.
 */
export function scratchPathFor(destination: Destination, suffix: string): string {
  const unique = `${process.pid}.${randomBytes(4).toString('hex')}.${suffix}`;
  return destination.kind === 'replace'
    ? join(dirname(destination.target), `.${basename(destination.target)}.${unique}`)
    : join(tmpdir(), `.mcp-tasks-output.${unique}`);
}

function temporaryPathFor(destination: Destination): string {
  return scratchPathFor(destination, 'partial');
}

/**
 * This process's stdout or stderr when `path` names it (`/dev/stdout`, `/dev/fd/1`, `/proc/self/fd/1`, and 2): it is
 * written through the stream Node already has, because re-opening it by name fails when it is a socket (`ENXIO`, as
 * when a parent process spawned us with pipes) and would bypass what the stream still buffers.
 */
function standardStreamOf(path: string): NodeJS.WriteStream | undefined {
  const absolute = resolve(path);
  if (['/dev/stdout', '/dev/fd/1', '/proc/self/fd/1'].includes(absolute)) return process.stdout;
  if (['/dev/stderr', '/dev/fd/2', '/proc/self/fd/2'].includes(absolute)) return process.stderr;
  return undefined;
}

/**
 * Copy `spool` (all of it, from its start) into `path`, opened for writing as a shell's `>` would.
 * @param given the path as the user gave it, for the error.
 * @throws InPlaceWriteError for a failure or an abort once `path` is open (it may hold part of the result); opening's
 *   own error (nothing written) as it is.
 */
async function copyInto(
  spool: FileHandle,
  path: string,
  given: string,
  { signal, terminal }: { signal?: AbortSignal | undefined; terminal?: ((text: string) => string) | undefined },
): Promise<void> {
  copies++;
  try {
    const stream = standardStreamOf(path);
    if (stream) {
      const shown = stream.isTTY && terminal ? terminalPieces(terminal) : undefined;
      try {
        for (let position = 0; ;) {
          signal?.throwIfAborted();
          const { bytesRead, buffer } = await spool.read(Buffer.alloc(COPY_BYTES), 0, COPY_BYTES, position);
          const piece = shown ? shown(buffer.subarray(0, bytesRead)) : buffer.subarray(0, bytesRead);
          if (piece.length > 0 && !stream.write(piece)) await waitForDrain(stream, signal);
          if (bytesRead === 0) return;
          position += bytesRead;
        }
      } catch (error) {
        throw new InPlaceWriteError(given, { cause: error });
      }
    }
    const out = await open(path, 'w');
    try {
      const shown = terminal && isatty(out.fd) ? terminalPieces(terminal) : undefined;
      const buffer = Buffer.alloc(COPY_BYTES);
      for (let position = 0; ;) {
        signal?.throwIfAborted();
        const { bytesRead } = await spool.read(buffer, 0, COPY_BYTES, position);
        const piece = shown ? shown(buffer.subarray(0, bytesRead)) : buffer.subarray(0, bytesRead);
        for (let written = 0; written < piece.length;) written += (await out.write(piece, written, piece.length - written)).bytesWritten;
        if (bytesRead === 0) break;
        position += bytesRead;
      }
    } catch (error) {
      throw new InPlaceWriteError(given, { cause: error });
    } finally {
      await out.close();
    }
  } finally {
    copies--;
  }
}

/**
 * Bytes → the bytes a terminal is given: UTF-8 decoded across pieces (a character split between two reads is kept
 * whole), passed through `terminal`, encoded again. An empty piece ends the text (flushes the decoder).
 */
export function terminalPieces(terminal: (text: string) => string): (bytes: Buffer) => Buffer {
  const decoder = new TextDecoder('utf-8');
  return (bytes) => Buffer.from(terminal(decoder.decode(bytes, { stream: bytes.length > 0 })), 'utf8');
}

/** Until `stream` drains; its error (e.g. `EPIPE`: the reader went away) or the signal's abort is thrown. */
function waitForDrain(stream: NodeJS.WriteStream, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolveDrain, reject) => {
    const done = (error?: Error): void => {
      stream.off('drain', done);
      stream.off('error', done);
      signal?.removeEventListener('abort', aborted);
      if (error) reject(error);
      else resolveDrain();
    };
    const aborted = (): void => done(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
    stream.on('drain', done).on('error', done);
    signal?.addEventListener('abort', aborted);
  });
}

/**
 * Give the new file `existing`'s permission bits and owner. The owner only where this process may (root; a user's
 * own file already has its uid): EPERM leaves the new file this process's, with the same bits.
 */
async function takeOver(file: FileHandle, existing: { mode: number; uid: number; gid: number }): Promise<void> {
  await file.chown(existing.uid, existing.gid).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPERM') throw error;
  });
  // After chown, which clears set-id bits.
  await file.chmod(existing.mode);
}
