/**
 * `call|watch|resume --output FILE`: the result written to FILE (see `writeOutputFile` for how FILE is written), and
 * what it means when that fails here, on this machine, rather than on the server.
 */
import { InPlaceWriteError, writeOutputFile } from '../client/file-destination.js';
import { type CallToolResult, TaskNotFoundError, type TasksClient, TasksClientError } from '../client/index.js';
import { resultResourceSize } from '../client/result-resource.js';
import { saveLargeResult } from './result-file.js';

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
      return await writeOutputFile(request.path, async (file) => {
        const body = Buffer.from(inline(), 'utf8');
        await file.writeFile(body);
        return body.length;
      });
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
