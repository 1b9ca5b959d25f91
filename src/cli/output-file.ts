/**
 * `call|watch|resume --output FILE`: the result written to FILE (see `writeOutputFile` for how FILE is written), and
 * what it means when that fails here, on this machine, rather than on the server.
 */
import { copyingInPlace, InPlaceWriteError, removeScratchFilesNow, writeOutputFile } from '../client/file-destination.js';
import { type CallToolResult, TaskNotFoundError, type TasksClient, TasksClientError } from '../client/index.js';
import { resultResourceSize } from '../client/result-resource.js';
import { saveLargeResult } from './result-file.js';
import { onTerminal } from './terminal-text.js';

/**
 * FILE could not be written on this machine (a full disk `ENOSPC`, `EIO`, a quota, permissions changed since the
 * check): nothing is wrong with the task or the server, and a retry of the same command fails the same way until the
 * cause is fixed. The CLI exits 74 (`ExitCode.ioError`).
 */
export class OutputWriteError extends Error {
  override readonly name = 'OutputWriteError';

  /**
   * FILE may hold part of the result: it is written in place (a FIFO, a device, `/dev/stdout`, as a shell's `>`
   * writes it) and the copy into it failed midway. Otherwise FILE is as it was: a regular file is replaced only by a
   * complete one.
   */
  readonly partial: boolean;

  /**
   * @param path FILE as given.
   * @param code the file system's error code (`ENOSPC`, `EIO`, …), when it gave one.
   */
  constructor(
    readonly path: string,
    readonly code: string | undefined,
    options: { cause: unknown },
  ) {
    const partial = options.cause instanceof InPlaceWriteError;
    super(`--output ${path}: could not write the result here (${describeSystemError(partial ? (options.cause as Error).cause : options.cause)})`, options);
    this.partial = partial;
  }
}

/** What `--output` writes: the text, or with `json` the document `--json` prints. */
export interface OutputRequest {
  path: string;
  json: boolean;
  /** The task the result is of, when known: named in the `--json` document. */
  taskId?: string;
  /** The link of a bounded result (`mcp-tasks://tasks/{id}/result`): the whole result is read back through it. */
  link?: string;
  /** Aborts the read-back (Ctrl-C): nothing is left behind. */
  signal?: AbortSignal;
}

/**
 * Write `result` to the file: `inline` (what stdout would show: the `--json` document or the text) for a whole
 * result; the whole result read back from the server for a bounded one.
 * @returns bytes written.
 * @throws TaskNotFoundError (the result is gone: the task expired or was purged after it ended), with a message
 *   naming `--output`; OutputWriteError when FILE could not be written here; the read's own errors (connection,
 *   protocol, the signal's abort) as they are.
 */
export async function saveOutput(client: TasksClient, result: CallToolResult, request: OutputRequest, inline: () => string): Promise<number> {
  try {
    if (request.link === undefined)
      return await writeOutputFile(
        request.path,
        async (file) => {
          const body = Buffer.from(inline(), 'utf8');
          await file.writeFile(body);
          return body.length;
        },
        { ...(request.signal ? { signal: request.signal } : {}), terminal: onTerminal(request.json) },
      );
    const bytes = resultResourceSize(result);
    return await saveLargeResult(
      client,
      request.link,
      request.path,
      { json: request.json, ...(request.taskId ? { taskId: request.taskId } : {}) },
      {
        ...(bytes === undefined ? {} : { bytes }),
        ...(request.signal ? { signal: request.signal } : {}),
      },
    );
  } catch (error) {
    // The task ended, and its result went before it could be read (expired or purged in between): an unknown or
    // expired task (exit 4), not bad input.
    if (error instanceof TaskNotFoundError)
      throw new TaskNotFoundError(
        error.taskId,
        `${error.message}; --output ${request.path} could not read it (nothing was written). The task ended; its result is gone.`,
        { cause: error },
      );
    if (isLocalFileError(error)) throw new OutputWriteError(request.path, (error as NodeJS.ErrnoException).code, { cause: error });
    throw error;
  }
}

/**
 * A failure of this machine's file system (Node's system errors carry `syscall`), as opposed to one of the read: the
 * client library wraps every network failure in a TasksClientError.
 */
function isLocalFileError(error: unknown): boolean {
  return error instanceof Error && !(error instanceof TasksClientError) && typeof (error as NodeJS.ErrnoException).syscall === 'string';
}

function describeSystemError(error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException;
  return code === undefined ? String(message) : `${code}: ${message.replace(/^[A-Z]+: /, '')}`;
}

/** The signals handled while `--output` is written (a shell reports 130, 143, 129 for them: 128 + the number). */
type OutputSignal = 'SIGINT' | 'SIGTERM' | 'SIGHUP';

/**
 * While `--output FILE` is being written: SIGTERM, SIGHUP and a Ctrl-C that the read-back's abort does not handle
 * (a second one, or one during the copy into FILE written in place, whose blocked `open()`/`write()` no abort
 * reaches) remove this process's scratch files — the new file beside FILE, the spools in `$TMPDIR` — and end the
 * process by the signal at once (a shell reports 130, 143, 129). Without it, Node's default for these signals ends it
 * before any `finally` runs and leaves them.
 * @param signal the read-back's abort (the first Ctrl-C; see `detachOnInterrupt`), when there is one.
 * @returns `dispose`, to call once FILE is written or the save failed.
 */
export function removeScratchOnSignals(path: string, signal: AbortSignal | undefined): { dispose(): void } {
  let interrupts = 0;
  const exit = (name: OutputSignal): void => {
    const partial = copyingInPlace();
    removeScratchFilesNow();
    process.stderr.write(
      `mcp-tasks: ${name === 'SIGINT' ? 'interrupted' : `stopped by ${name}`}; --output ${path} ${partial ? 'may hold part of the result (it is written in place)' : 'was not written'} (nothing left beside it)\n`,
    );
    // Die of the signal itself (a shell reports 128 + its number): process.exit() would wait for the thread pool,
    // where a copy into a FIFO whose reader stopped reading may sit in write() forever. With no listener left, Node
    // restores the default action, which ends the process at once.
    process.removeAllListeners(name);
    process.kill(process.pid, name);
  };
  const onInterrupt = (): void => {
    interrupts++;
    // The first Ctrl-C of a read-back aborts it (its own listener): the save stops, cleans up and exits 130.
    if (interrupts === 1 && signal !== undefined && !copyingInPlace()) return;
    exit('SIGINT');
  };
  const onTerminate = (): void => exit('SIGTERM');
  const onHangUp = (): void => exit('SIGHUP');
  process.on('SIGINT', onInterrupt).on('SIGTERM', onTerminate).on('SIGHUP', onHangUp);
  return {
    dispose: () => {
      process.off('SIGINT', onInterrupt).off('SIGTERM', onTerminate).off('SIGHUP', onHangUp);
    },
  };
}
