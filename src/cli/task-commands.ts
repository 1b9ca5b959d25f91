import {
  type ConnectionEvent,
  type InputHandler,
  TaskJournal,
  TaskNotFoundError,
  type TasksClient,
  TasksConnectionError,
  type TaskSnapshot,
  TaskTimeoutError,
} from '../client/index.js';
import { remoteLine, remoteLines, remoteTimestamp } from '../client/remote-text.js';
import { V1_PROTOCOL_VERSION } from '../protocol/constants.js';
import { cliCommand, taskCommand } from './invocation.js';
import { jsonDocument } from './json-output.js';
import { describeField, formFields } from './prompt-schema.js';
import { checkOutputWritable, detachOnInterrupt, followTask, openClient, reportFailure, type RequestorFlags, resolveTarget, resultText } from './requestor.js';
import { terminalText } from './terminal-text.js';
import { ExitCode } from './usage-error.js';

/** Options of `mcp-tasks watch`. */
export interface WatchFlags extends RequestorFlags {
  /** `--timeout` in ms (already converted from seconds). */
  timeout?: number;
}

/**
 * Connect for one task id and run `use`. When nobody chose the protocol (no `--protocol`, not in the journal) and
 * the 2026-07-28 connection does not know the task, a 2025-11-25 session is tried as well: a dual-generation server keeps
 * v1 tasks invisible to v2 requests. `onInput` makes the connections answer questions. Returns the exit code;
 * failures after connecting are reported on stderr — a server that cannot be reached with the command to try again
 * (`command`, with the `--url`/`--protocol` given), since the task keeps its id.
 */
export async function withTaskClient(
  command: 'get' | 'watch' | 'cancel' | 'answer',
  taskId: string,
  flags: RequestorFlags,
  use: (client: TasksClient) => Promise<number>,
  onInput?: InputHandler,
): Promise<number> {
  const target = await resolveTarget(flags, taskId); // a UsageError here exits 64 through main
  let client: TasksClient | undefined;
  try {
    client = await openClient(target, flags, target.protocol, onInput);
    try {
      return await use(client);
    } catch (error) {
      if (!(error instanceof TaskNotFoundError && target.protocolSource === 'default' && client.generation === 'v2')) throw error;
      const legacy = await openClient(target, flags, V1_PROTOCOL_VERSION, onInput).catch(() => undefined);
      if (legacy?.generation !== 'v1') {
        await legacy?.close();
        throw error;
      }
      await client.close();
      client = legacy;
      return await use(client);
    }
  } catch (error) {
    const code = reportFailure(error, flags);
    // A server that is down has not lost the task: say so, and how to ask again (a newcomer after `kill -9` saw only
    // the connection error).
    if (error instanceof TasksConnectionError && error.retryable && !flags.json) {
      const again = taskCommand(command, taskId, {
        ...(flags.url === undefined ? {} : { url: flags.url }),
        ...(flags.protocol === undefined ? {} : { protocol: flags.protocol }),
      });
      process.stderr.write(`  task ${taskId} keeps its id; try again once the server answers: ${again}\n`);
    }
    return code;
  } finally {
    await client?.close();
  }
}

/** `mcp-tasks get <taskId>`: print the task's current state (exit 0 whatever the status; 4 unknown; 5 unreachable). */
export async function getCommand(taskId: string, flags: RequestorFlags): Promise<void> {
  process.exitCode = await withTaskClient('get', taskId, flags, async (client) => {
    const snapshot = await client.getTask(taskId);
    process.stdout.write(flags.json ? jsonDocument(snapshot) : describeSnapshot(snapshot, client));
    return ExitCode.completed;
  });
}

/**
 * `mcp-tasks watch <taskId>`: follow a task to its end like `call` does (through notifications when the server
 * offers them, else by polling), then print its result. It answers no questions: those are for `mcp-tasks answer`.
 */
export async function watchCommand(taskId: string, flags: WatchFlags): Promise<void> {
  await checkOutputWritable(flags.output);
  const deadline = flags.timeout === undefined ? undefined : Date.now() + flags.timeout;
  const interrupt = detachOnInterrupt();
  try {
    // The attempt this requestor saw last (a task it created saw its first run at least): a higher one now is
    // announced as a restart by the server, as `resume` announces it.
    const journaled = await new TaskJournal(TaskJournal.defaultPath()).get(taskId).catch(() => undefined);
    const knownAttempt = journaled ? { knownAttempt: journaled.lastAttempt ?? 1 } : {};
    process.exitCode = await withTaskClient('watch', taskId, flags, async (client) => {
      await client.getTask(taskId); // finds the right connection before the status line starts
      return followTask(client, taskId, flags, { ...(deadline === undefined ? {} : { deadline }), signal: interrupt.signal, ...knownAttempt });
    });
  } finally {
    interrupt.dispose();
  }
}

/** Options of `mcp-tasks cancel`. */
export interface CancelFlags extends RequestorFlags {
  /** `--timeout` in ms: how long to wait for the final outcome after the request. */
  timeout?: number;
}

/** How long `cancel` waits for the final outcome by default (ms). */
const CANCEL_WAIT_MS = 30_000;

/**
 * `mcp-tasks cancel <taskId>`: request cancellation, then wait for the task's final outcome and report it — a task
 * may still end `completed` (cancellation is cooperative, and a cancel can race the end). Exit 0 when the task ended
 * `cancelled`, 9 when it ended another way before the cancellation took effect (or had already ended), 124 when it
 * was not final within `--timeout`; the outcome is on stdout.
 */
export async function cancelCommand(taskId: string, flags: CancelFlags): Promise<void> {
  process.exitCode = await withTaskClient('cancel', taskId, flags, async (client) => {
    const onConnection = (event: ConnectionEvent): void => {
      process.stderr.write(
        event.state === 'unreachable'
          ? `mcp-tasks: server unreachable (${event.error.message}); task ${taskId} keeps its id — retrying in ${(event.retryInMs / 1000).toFixed(1)} s\n`
          : `mcp-tasks: server reachable again after ${(event.downMs / 1000).toFixed(1)} s\n`,
      );
    };
    // v2 only acknowledges a cancel, even of a task that ended long ago (E30): read the status first, so such a task
    // is reported as already ended instead of "waiting for the final outcome". An error here (an unknown task, an
    // unreachable server) is left to the cancel itself, which reports and retries it.
    const before = client.generation === 'v2' ? await client.getTask(taskId).catch(() => undefined) : undefined;
    const answered = (await client.cancelTask(taskId, { onConnection })) ?? (before && isFinal(before.status) ? before : undefined);
    let final = answered && isFinal(answered.status) ? answered : undefined;
    if (!final) {
      process.stderr.write(`mcp-tasks: task ${taskId}: cancellation requested; waiting for the final outcome\n`);
      final = await client.waitForTask(taskId, { timeoutMs: flags.timeout ?? CANCEL_WAIT_MS, onConnection }).catch((error: unknown) => {
        if (error instanceof TaskTimeoutError) return undefined;
        throw error;
      });
    }
    // 0 only when the task ended cancelled; 9 when it ended another way first; 124 when not final in time.
    const code = !final ? ExitCode.timedOut : final.status === 'cancelled' ? ExitCode.completed : ExitCode.notCancelled;
    if (flags.json) {
      process.stdout.write(jsonDocument({ taskId, acknowledged: true, final: final?.status ?? null, exitCode: code, ...(final ? { task: final } : {}) }));
    } else if (!final) {
      process.stdout.write(`task ${taskId}: cancellation requested; not final yet (see ${taskCommand('get', taskId)})\n`);
    } else if (answered?.status === final.status && answered.status !== 'cancelled') {
      process.stdout.write(`task ${taskId}: already ${final.status}, nothing to cancel\n`);
    } else {
      process.stdout.write(
        final.status === 'cancelled' ? `task ${taskId}: cancelled\n` : `task ${taskId}: ${final.status} — it ended before the cancellation took effect\n`,
      );
    }
    return code;
  });
}

function isFinal(status: string): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}

function describeSnapshot(snapshot: TaskSnapshot, client: TasksClient): string {
  const rows: Array<[string, string | undefined]> = [
    ['task', snapshot.taskId],
    ['status', snapshot.operations?.length ? `${snapshot.status.padEnd(14)} domain outcome: ${domainOutcome(snapshot.operations)}` : snapshot.status],
    ['message', snapshot.statusMessage === undefined ? undefined : remoteLine(snapshot.statusMessage)],
    ['created', remoteTimestamp(snapshot.createdAt)],
    ['updated', remoteTimestamp(snapshot.lastUpdatedAt)],
    ['ttl', snapshot.ttlMs === null ? 'unlimited' : `${snapshot.ttlMs} ms`],
    ['poll', snapshot.pollIntervalMs === undefined ? undefined : `${snapshot.pollIntervalMs} ms`],
    ['server', `${client.url} (tasks ${client.generation}, MCP ${client.protocolVersion})`],
    ['error', snapshot.error ? `${remoteLine(snapshot.error.message)} (JSON-RPC ${snapshot.error.code})` : undefined],
  ];
  const lines = rows.filter((row): row is [string, string] => row[1] !== undefined).map(([key, value]) => `${key.padEnd(8)} ${value}`);
  const indent = ' '.repeat(9);
  for (const [key, request] of Object.entries(snapshot.inputRequests ?? {})) {
    lines.push(`${'input'.padEnd(8)} ${remoteLine(key, 200)}: ${remoteLines(request.params?.message ?? request.method, indent)}`);
    for (const field of formFields(request.params?.requestedSchema)) lines.push(`${indent}field ${remoteLine(field.name, 200)}: ${describeField(field)}`);
  }
  if (snapshot.status === 'input_required') lines.push(`${indent}answer with: ${taskCommand('answer', snapshot.taskId)}`);
  // Operations come from the server's `_meta` like any other text of it; a receipt is shown as its JSON text, made one
  // line by the same rule (its strings' line breaks are JSON escapes there, and a role marker after one still counts).
  for (const op of snapshot.operations ?? [])
    lines.push(
      `${'op'.padEnd(8)} ${remoteLine(op.operationId, 200)}  ${remoteLine(op.effect, 200)}  ${op.status}${op.receipt ? `  ${remoteLine(JSON.stringify(op.receipt))}` : ''}`,
    );
  // The result as `call` prints it: shown, not run, on a terminal.
  if (snapshot.result)
    lines.push(
      `result${snapshot.result.isError ? ' (tool error)' : ''}:`,
      process.stdout.isTTY ? terminalText(resultText(snapshot.result)) : resultText(snapshot.result),
    );
  return `${lines.join('\n')}\n`;
}

/**
 * One word for what the system of record did, next to the task status: `confirmed` only when every operation is,
 * `unknown` as soon as one is (an operator must look), else the statuses counted.
 */
function domainOutcome(operations: NonNullable<TaskSnapshot['operations']>): string {
  const statuses = operations.map((op) => op.status);
  if (statuses.every((status) => status === 'confirmed')) return `confirmed (${operations.length} operation${operations.length === 1 ? '' : 's'})`;
  if (statuses.includes('unknown')) return `unknown (${cliCommand()} ops list)`;
  const counts = new Map<string, number>();
  for (const status of statuses) counts.set(status, (counts.get(status) ?? 0) + 1);
  return [...counts].map(([status, n]) => `${n} ${status}`).join(', ');
}
