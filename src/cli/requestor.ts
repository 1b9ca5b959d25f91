import { InPlaceWriteError, probeOutputFile, ScratchDirectoryError } from '../client/file-destination.js';
import {
  type CallToolResult,
  CapabilityMissingError,
  type ConnectionEvent,
  connectTasksClient,
  type InputHandler,
  InputNotAnsweredError,
  type ProtocolChoice,
  resultResourceUri,
  TaskCancelledError,
  TaskFailedError,
  TaskJournal,
  TaskNotFoundError,
  TaskOutcomeUnknownError,
  type TasksClient,
  TasksClientError,
  TasksProtocolError,
  TaskTimeoutError,
  ToolCallFailedError,
  ToolCallOutcomeUnknownError,
  ToolCallRefusedError,
} from '../client/index.js';
import { remoteLine, remoteLines } from '../client/remote-text.js';
import { ErrorCode, INPUT_REFUSED_META_KEY } from '../protocol/constants.js';
import { parseResultUri } from '../protocol/result-uri.js';
import { taskCommand } from './invocation.js';
import { escapeJsonText, writeJson } from './json-output.js';
import { OutputWriteError, removeScratchOnSignals, saveOutput } from './output-file.js';
import { type CliInput, describeQuestion, exampleAnswers, InputLeftOpenError } from './prompt-resolver.js';
import { DEFAULT_URL } from './requestor-options.js';
import { StatusLine } from './status-line.js';
import { terminalText } from './terminal-text.js';
import { ExitCode, UsageError } from './usage-error.js';

/** Flags shared by `call`, `get`, `watch` and `cancel`. */
export interface RequestorFlags {
  url?: string;
  protocol?: ProtocolChoice;
  token?: string;
  json?: boolean;
  /** `call`/`watch`: write the whole result to this file instead of stdout (a large result read back in full). */
  output?: string;
}

/** Where to send requests for a command, and where that choice came from. */
export interface Target {
  url: string;
  protocol: ProtocolChoice;
  /** `flag`: given on the command line; `journal`: from the task's journal entry; `default`: `auto`. */
  protocolSource: 'flag' | 'journal' | 'default';
  journal: TaskJournal;
}

/**
 * Resolve URL and protocol: flags first, then the task's journal entry (for `get`/`watch`/`cancel`), then
 * `MCP_TASKS_URL`, then {@link DEFAULT_URL} with `auto`.
 * @throws UsageError for a malformed URL (exit 64).
 */
export async function resolveTarget(flags: RequestorFlags, taskId?: string): Promise<Target> {
  const journal = new TaskJournal(TaskJournal.defaultPath());
  const entry = taskId === undefined ? undefined : await journal.get(taskId).catch(() => undefined);
  const url = flags.url ?? entry?.url ?? process.env.MCP_TASKS_URL ?? DEFAULT_URL;
  try {
    new URL(url);
  } catch {
    throw new UsageError(`--url ${url}: not a URL`);
  }
  if (flags.protocol) return { url, protocol: flags.protocol, protocolSource: 'flag', journal };
  if (entry && sameUrl(entry.url, url)) return { url, protocol: entry.protocolVersion as ProtocolChoice, protocolSource: 'journal', journal };
  return { url, protocol: 'auto', protocolSource: 'default', journal };
}

function sameUrl(a: string, b: string): boolean {
  try {
    return new URL(a).href === new URL(b).href;
  } catch {
    return false; // a hand-edited journal entry
  }
}

/**
 * Connect for a command; the token comes from `--token` or `MCP_TASKS_TOKEN`. With `onInput` the connection
 * declares form elicitation and answers the server's questions through it.
 */
export function openClient(
  target: Pick<Target, 'url' | 'journal'>,
  flags: RequestorFlags,
  protocol: ProtocolChoice,
  onInput?: InputHandler,
  journal = true,
): Promise<TasksClient> {
  const token = flags.token ?? process.env.MCP_TASKS_TOKEN;
  return connectTasksClient({
    url: target.url,
    protocol,
    ...(token ? { token } : {}),
    journal: journal ? target.journal.path : false,
    clientInfo: { name: 'mcp-tasks-cli', version: '0.1.0' },
    ...(onInput ? { onInput } : {}),
  });
}

/** The command that answers a task's questions from another shell: the bare id when the journal knows the task. */
export function answerHint(client: TasksClient, taskId: string): Promise<string> {
  return hintFor(client, 'answer', taskId);
}

/** How to pick the task up again (after Ctrl-C or `--timeout`): the bare id when the journal knows the task. */
export function resumeHint(client: TasksClient, taskId: string): Promise<string> {
  return hintFor(client, 'watch', taskId);
}

async function hintFor(client: TasksClient, command: string, taskId: string): Promise<string> {
  const journaled = await client.journal?.get(taskId).catch(() => undefined);
  return taskCommand(command, taskId, journaled ? {} : { url: client.url, protocol: client.protocolVersion });
}

/** Exit code of a finished command that produced `result`: 64 when the server refused the arguments before running the tool. */
export function resultExitCode(result: CallToolResult): number {
  if (!result.isError) return ExitCode.completed;
  return inputRefused(result) ? ExitCode.usage : ExitCode.toolError;
}

/** Whether an `isError` result says the tool never ran because its arguments were refused (`_meta["dev.mcp-tasks/input-refused"]`). */
function inputRefused(result: CallToolResult): boolean {
  return result._meta?.[INPUT_REFUSED_META_KEY] === true;
}

/**
 * Print a result on stdout (`--json`: one `{taskId?, status, result}` document) and say on stderr when the tool
 * reported an error. A result too large to answer inline arrives bounded (its first part, a note and a link to the
 * whole, issue 10 §2): with `--output FILE` the whole result is read back (`resources/read` of its chunks) and
 * written to FILE instead of stdout; without it, stderr says how to get it.
 * @param signal Ctrl-C (see {@link detachOnInterrupt}): aborts the read-back; the partial file is removed.
 * @returns the exit code: {@link resultExitCode}, or 74 (`ioError`) when FILE could not be written here (stderr,
 *   and with `--json` stdout, say so and how to save the result again), or 130 when interrupted during the
 *   read-back (stderr says how to save the result again).
 * @throws the read-back's errors (TaskNotFoundError for a result gone, connection and protocol errors).
 */
export async function printResult(result: CallToolResult, flags: RequestorFlags, client: TasksClient, taskId?: string, signal?: AbortSignal): Promise<number> {
  const link = resultResourceUri(result);
  const document = (shown: CallToolResult): string => `${JSON.stringify({ ...(taskId ? { taskId } : {}), status: 'completed', result: shown }, null, 2)}\n`;
  if (flags.output !== undefined) {
    // A large result is read back and rendered as its chunks come in (bounded memory); either way the file appears
    // only once complete, so a read that fails leaves no half result under the user's name.
    let bytes: number;
    const signals = removeScratchOnSignals(flags.output, signal);
    try {
      bytes = await saveOutput(
        client,
        result,
        { path: flags.output, json: flags.json === true, ...(taskId ? { taskId } : {}), ...(link ? { link } : {}), ...(signal ? { signal } : {}) },
        () => (flags.json ? document(result) : withNewline(resultText(result))),
      );
    } catch (error) {
      signals.dispose();
      const owner = taskId ?? (link === undefined ? undefined : parseResultUri(link)?.taskId);
      if (signal?.aborted) {
        // Ctrl-C while the result was read back: the task is over, so there is nothing to detach from; what was
        // written is removed (see writeOutputFile) and the result stays on the server.
        const again =
          owner === undefined ? '' : `\n  the task's result is still kept on the server; save it with: ${await resumeHint(client, owner)} --output <file>`;
        // Stopped during the copy into FILE written in place (a FIFO, /dev/stdout): part of it may be there.
        const partial = error instanceof InPlaceWriteError || (error instanceof OutputWriteError && error.partial);
        const state = partial ? 'may hold part of the result (it is written in place)' : 'was not written';
        process.stderr.write(`mcp-tasks: interrupted; --output ${flags.output} ${state} (nothing left beside it)${again}\n`);
        return ExitCode.interrupted;
      }
      if (!(error instanceof OutputWriteError)) throw error;
      // The reader of a pipe or FIFO went away (`--output /dev/stdout | head`): it took what it wanted, as a shell's
      // `> fifo` would give it; quiet, and the command's own exit code, as the CLI does for its stdout (main.ts).
      if (error.code === 'EPIPE') return resultExitCode(result);
      return reportOutputWriteError(error, flags, client, owner);
    }
    signals.dispose();
    process.stderr.write(`mcp-tasks: result written to ${flags.output} (${bytes} bytes${link === undefined ? '' : ', read back in full from the server'})\n`);
  } else if (flags.json) {
    // document() as --output saves it, with the characters a terminal acts on written as escapes (json-output.ts).
    process.stdout.write(escapeJsonText(document(result)));
  } else {
    const text = resultText(result);
    // A terminal acts on control characters: a result from any server is shown, not run (piped, it passes as is).
    if (text.length > 0) process.stdout.write(withNewline(process.stdout.isTTY ? terminalText(text) : text));
  }
  if (link !== undefined && flags.output === undefined) {
    // The link names the task, also when the call was answered inline (a quick task within the inline grace).
    const owner = taskId ?? parseResultUri(link)?.taskId;
    process.stderr.write(
      `mcp-tasks: the result was too large to send inline; this is its first part. Save all of it with: ${owner ? `${await resumeHint(client, owner)} --output <file>` : '--output <file>'}\n`,
    );
  }
  if (result.isError)
    process.stderr.write(
      inputRefused(result)
        ? `mcp-tasks: the arguments were refused; the tool did not run\n`
        : `mcp-tasks: the tool reported an error${taskId ? ` (task ${taskId})` : ''}\n`,
    );
  return resultExitCode(result);
}

/**
 * FILE could not be written here: exit 74, never 5 — the server and the task are fine, and retrying the same command
 * fails the same way until the disk (or whatever it was) is fixed. The task's result stays on the server until the
 * task expires, so the message gives the command that saves it again.
 */
async function reportOutputWriteError(error: OutputWriteError, flags: RequestorFlags, client: TasksClient, owner: string | undefined): Promise<number> {
  const again = owner === undefined ? undefined : `${await resumeHint(client, owner)} --output <file>`;
  const kept = again
    ? `the task's result is still kept on the server (until the task expires); save it again, once a file can be written, with: ${again}`
    : 'the result was answered inline and is not kept on the server';
  if (flags.json) {
    const failure = {
      ...(owner ? { taskId: owner } : {}),
      status: 'output_failed',
      output: error.path,
      // true: FILE (written in place: a FIFO, a device) may hold part of the result; false: it is as it was.
      partial: error.partial,
      error: { code: error.code ?? null, message: error.message },
    };
    writeJson({ ...failure, ...(again ? { saveAgain: again } : {}), exitCode: ExitCode.ioError });
  }
  // Only a path written in place (a FIFO, a device, /dev/stdout) can hold part of it: a regular file is replaced by
  // a complete one or not at all.
  const left = error.partial
    ? `${error.path} may hold part of the result (it is written in place, as with >)`
    : `${error.path} is left as it was (nothing was written to it)`;
  process.stderr.write(`mcp-tasks: ${error.message}; ${left}.\n  ${kept}\n`);
  return ExitCode.ioError;
}

/**
 * `--output FILE` is checked before anything is sent: a result must not be lost to a path that cannot be written
 * once its tool has run. FILE is neither created nor changed here: a regular (or missing) FILE is replaced by a new
 * file written beside it, so its directory must take a new file; anything else (`/dev/stdout`, a FIFO, a device) is
 * written in place once the result is complete, so it must be writable (see `writeOutputFile`).
 * @throws UsageError (exit 64) when it cannot be written.
 */
export async function checkOutputWritable(path: string | undefined): Promise<void> {
  if (path === undefined) return;
  try {
    await probeOutputFile(path);
  } catch (error) {
    if (error instanceof ScratchDirectoryError) throw new UsageError(`--output ${path}: ${error.message}`);
    throw new UsageError(`--output ${path}: cannot write there (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
}

function withNewline(text: string): string {
  return text.length === 0 || text.endsWith('\n') ? text : `${text}\n`;
}

/** The human-readable part of a result: its text blocks (other blocks named), else its structured content. */
export function resultText(result: CallToolResult): string {
  const parts = result.content.map((block) =>
    block.type === 'text' && typeof block.text === 'string' ? block.text : `[${block.type} content omitted; use --json]`,
  );
  if (parts.length === 0 && result.structuredContent) parts.push(JSON.stringify(result.structuredContent, null, 2));
  return parts.join('\n');
}

/**
 * Report a failure on stderr (with `--json`, also one JSON object on stdout: `status`, `exitCode` and what is known)
 * and return the exit code of {@link ExitCode}: 2 failed, 3 cancelled, 4 unknown or expired, 5 connection or
 * protocol error, 6 input needed, 7 refused by policy, 8 outcome unknown, 64 bad input (an unknown tool or
 * arguments the server refuses, JSON-RPC -32602), 124 timed out.
 */
export function reportFailure(error: unknown, flags: RequestorFlags, hint?: string): number {
  const { code, json, text } = describeFailure(error, hint);
  if (flags.json && json) writeJson({ ...json, exitCode: code });
  if (text) process.stderr.write(text);
  return code;
}

/** A failure's exit code, its JSON object for `--json` (undefined: already printed) and its stderr text. */
function describeFailure(error: unknown, hint: string | undefined): { code: number; json: Record<string, unknown> | undefined; text: string } {
  if (error instanceof CapabilityMissingError) {
    return {
      code: ExitCode.refusedByPolicy,
      json: { status: 'refused', tool: error.tool, policy: error.policy, missing: error.missing, capabilitiesDigest: error.capabilitiesDigest },
      text: `mcp-tasks: refused by policy, nothing was sent: ${error.tool} needs a task (--task ${error.policy}) and:\n${error.missing.map((line) => `  - ${line}\n`).join('')}`,
    };
  }
  if (error instanceof TaskOutcomeUnknownError)
    return {
      code: ExitCode.outcomeUnknown,
      json: { taskId: error.taskId, status: 'unknown', reason: error.reason, lastStatus: error.lastStatus ?? null },
      text: `mcp-tasks: ${error.message}\n`,
    };
  if (error instanceof ToolCallOutcomeUnknownError)
    return { code: ExitCode.outcomeUnknown, json: { status: 'unknown', tool: error.tool }, text: `mcp-tasks: outcome unknown: ${error.message}\n` };
  if (error instanceof InputNotAnsweredError) {
    const questions = error.requests
      .map(
        (request) =>
          `  ${remoteLine(request.key, 200)}: ${remoteLines(request.params.message, '    ')}\n${describeQuestion(request).replaceAll(/^ {2}/gm, '    ')}`,
      )
      .join('');
    const example = error.requests[0] ? `  answer with: --answers ${exampleAnswers(error.requests[0])}\n` : '';
    return {
      code: ExitCode.inputNeeded,
      json: { status: 'input_required', tool: error.tool, questions: error.requests.map((request) => ({ key: request.key, message: request.params.message })) },
      text: `mcp-tasks: ${error.tool} asks for input before it starts, and none was given:\n${questions}${example}`,
    };
  }
  // The question and how to answer it are printed already.
  if (error instanceof InputLeftOpenError) return { code: ExitCode.inputNeeded, json: { status: 'input_required', message: error.message }, text: '' };
  if (error instanceof TaskFailedError)
    return {
      code: ExitCode.failed,
      json: { taskId: error.taskId, status: 'failed', error: error.error },
      text: `mcp-tasks: task ${error.taskId} failed: ${error.message} (JSON-RPC ${error.error.code})\n`,
    };
  if (error instanceof TaskCancelledError)
    return { code: ExitCode.cancelled, json: { taskId: error.taskId, status: 'cancelled' }, text: `mcp-tasks: ${error.message}\n` };
  if (error instanceof TaskTimeoutError)
    return {
      code: ExitCode.timedOut,
      json: { taskId: error.taskId, status: 'timed_out', lastStatus: error.snapshot?.status ?? null, message: error.message },
      text: `mcp-tasks: ${error.message}${hint ? `\n  resume with: ${hint}` : ''}\n`,
    };
  if (error instanceof TaskNotFoundError)
    return {
      code: ExitCode.unknownOrExpired,
      json: { taskId: error.taskId, status: 'not_found', message: error.message },
      text: `mcp-tasks: ${error.message}\n`,
    };
  if (error instanceof ToolCallRefusedError) {
    // Refused before anything ran (a quota, load, the kill switch, a canary): a script may call again later.
    const retry = error.retryAfterMs === undefined ? '' : `; retry in ${Math.ceil(error.retryAfterMs / 1000)} s`;
    return {
      code: ExitCode.refusedByPolicy,
      json: {
        status: 'refused',
        tool: error.tool,
        reason: error.reason ?? null,
        retryAfterMs: error.retryAfterMs ?? null,
        error: { code: error.code, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) },
      },
      text: `mcp-tasks: the server refused the call, nothing ran${error.reason ? ` (${error.reason})` : ''}: ${error.message}${retry}\n`,
    };
  }
  if (error instanceof ToolCallFailedError && error.code !== ErrorCode.InvalidParams)
    // The server answered the call: it failed, a known outcome (e.g. a sync tool that threw), not a connection problem.
    return {
      code: ExitCode.failed,
      json: {
        status: 'failed',
        tool: error.tool,
        error: { code: error.code, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) },
      },
      text: `mcp-tasks: ${error.message}\n`,
    };
  if (error instanceof TasksProtocolError && error.code === ErrorCode.InvalidParams) {
    // An unknown tool, or arguments the server refuses: bad input like any other (64), not a connection problem.
    return { code: ExitCode.usage, json: { status: 'bad_input', error: { code: error.code, message: error.message } }, text: `mcp-tasks: ${error.message}\n` };
  }
  const message = error instanceof TasksClientError ? error.message : error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return {
    code: ExitCode.connectionOrProtocol,
    json: { status: 'error', error: { ...(error instanceof TasksClientError && error.code !== null ? { code: error.code } : {}), message } },
    text: `mcp-tasks: ${message}\n`,
  };
}

/**
 * Ctrl-C handling for commands that wait: the first SIGINT aborts the returned signal (the command detaches and
 * exits 130, the task keeps running); a second one gets Node's default (immediate exit).
 */
export function detachOnInterrupt(): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const onInterrupt = (): void => controller.abort();
  process.once('SIGINT', onInterrupt);
  return { signal: controller.signal, dispose: () => process.off('SIGINT', onInterrupt) };
}

/**
 * The waiting part of `call` and `watch`: a live status line on stderr, notifications (or polling) under the
 * deadline, questions answered through `input` (the client's `onInput`), then the result on stdout. `several`: other
 * tasks are followed at the same time (plain status lines, a line naming the task before its result). Returns the
 * exit code.
 */
export async function followTask(
  client: TasksClient,
  taskId: string,
  flags: RequestorFlags,
  options: { deadline?: number; signal: AbortSignal; input?: CliInput; several?: boolean; label?: string; knownAttempt?: number },
): Promise<number> {
  // Several tasks followed at once (resume) share stderr: plain lines each, never one line redrawn in place.
  const stream = options.several ? { write: (text: string) => process.stderr.write(text), isTTY: false } : process.stderr;
  const status = new StatusLine(stream, taskId, options.input !== undefined, options.knownAttempt);
  options.input?.attachStatus(status);
  try {
    const result = await client.resume(taskId, {
      ...(options.deadline === undefined ? {} : { deadline: options.deadline }),
      signal: options.signal,
      notifications: true,
      onUpdate: (snapshot) => status.update(snapshot),
      onConnection: (event: ConnectionEvent) => status.connection(event),
    });
    status.clear();
    if (options.several) process.stderr.write(`mcp-tasks: task ${taskId}${options.label ? ` (${options.label})` : ''} completed; its result follows\n`);
    return await printResult(result, flags, client, taskId, options.signal);
  } catch (error) {
    status.clear();
    if (options.signal.aborted) {
      process.stderr.write(`mcp-tasks: detached; task ${taskId} keeps running on the server\n  resume with: ${await resumeHint(client, taskId)}\n`);
      return ExitCode.interrupted;
    }
    return reportFailure(error, flags, error instanceof TaskTimeoutError ? await resumeHint(client, taskId) : undefined);
  }
}
