import { type JournalEntry, type PendingCallEntry, type ProtocolChoice, TaskJournal, type TasksClient } from '../client/index.js';
import { remoteTimestamp } from '../client/remote-text.js';
import { cliCommand } from './invocation.js';
import { writeJson } from './json-output.js';
import { checkOutputWritable, detachOnInterrupt, followTask, openClient, printResult, reportFailure, type RequestorFlags } from './requestor.js';
import { ExitCode, UsageError } from './usage-error.js';

/** Options of `mcp-tasks resume`. */
export interface ResumeFlags extends RequestorFlags {
  /** `--timeout` in ms, for the whole command. */
  timeout?: number;
}

/**
 * `mcp-tasks tasks`: the journal — every task created and not yet delivered (id, tool, the status last observed and
 * when, `lastUpdatedAt`, endpoint, generation, correlation id), and every call whose answer never arrived. It asks
 * no server, so a status is shown as "last seen working at <time>": a detached task may have ended since. Arguments
 * of pending calls are never printed. Exit 0.
 */
export async function tasksCommand(flags: RequestorFlags): Promise<void> {
  const journal = new TaskJournal(TaskJournal.defaultPath());
  const [tasks, pending] = await Promise.all([journal.list(), journal.listPending()]);
  const withoutArguments = pending.map(({ arguments: _hidden, ...call }) => call);
  if (flags.json) {
    writeJson({ journal: journal.path, tasks, pending: withoutArguments });
    return;
  }
  if (tasks.length === 0 && pending.length === 0) {
    process.stdout.write(`no unfinished tasks in ${journal.path}\n`);
    return;
  }
  const rows = [
    ['TASK', 'TOOL', 'STATUS', 'UPDATED', 'SERVER', 'CORRELATION'],
    ...tasks.map((entry) => [
      entry.taskId,
      entry.tool,
      lastSeen(entry),
      remoteTimestamp(entry.lastUpdatedAt ?? entry.createdAt),
      `${entry.url} (${entry.generation})`,
      entry.correlationId ?? '-',
    ]),
    ...pending.map((call) => [
      '(no id yet)',
      call.tool,
      'call sent, no answer',
      call.sentAt,
      `${call.url} (${call.generation ?? 'no tasks'})`,
      call.correlationId,
    ]),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  process.stdout.write(
    rows
      .map((row) =>
        row
          .map((cell, column) => cell.padEnd(widths[column]!))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n',
  );
  if (tasks.length > 0) process.stdout.write(`statuses are what this client last saw, not the tasks' state now: ${cliCommand()} get <task> asks the server\n`);
  if (pending.length > 0)
    process.stdout.write(`calls without an id: their outcome is unknown; ${cliCommand()} resume resends them only to a server that honours idempotency keys\n`);
}

/**
 * `mcp-tasks resume`: follow every unfinished task of the journal to its end, all at once (`--url` limits it to one
 * endpoint), and take up calls whose answer never arrived (see {@link TasksClient.resumeCall}). Each result is
 * printed as it arrives, so a task waiting for input or running long delays no other; `--timeout` is one deadline
 * for all of them, and a task that got no status before it is reported as not reached, never as running. Exit 0
 * when everything completed, else the exit code of the first (in journal order) that did not. `--output FILE`
 * saves the result as `watch --output` does, when there is one thing to resume.
 * @throws UsageError (exit 64) for `--output` with several things to resume, or a FILE that cannot be written.
 */
export async function resumeCommand(flags: ResumeFlags): Promise<void> {
  const journal = new TaskJournal(TaskJournal.defaultPath());
  const only = flags.url === undefined ? undefined : new URL(flags.url).href;
  const tasks = (await journal.list()).filter((entry) => only === undefined || entry.url === only);
  const pending = (await journal.listPending()).filter((call) => only === undefined || call.url === only);
  if (tasks.length === 0 && pending.length === 0) {
    process.stderr.write(`mcp-tasks: nothing to resume in ${journal.path}\n`);
    process.exitCode = ExitCode.completed;
    return;
  }
  if (flags.output !== undefined && tasks.length + pending.length > 1)
    throw new UsageError(
      `--output ${flags.output}: saves one result, and ${tasks.length + pending.length} calls are unfinished; narrow with --url, or save each with ${cliCommand()} watch <task> --output FILE`,
    );
  await checkOutputWritable(flags.output);
  const deadline = flags.timeout === undefined ? undefined : Date.now() + flags.timeout;
  const interrupt = detachOnInterrupt();
  const clients = new Map<string, Promise<TasksClient>>();
  const clientFor = (url: string, protocolVersion: string): Promise<TasksClient> => {
    const key = `${protocolVersion} ${url}`;
    let client = clients.get(key);
    if (!client) {
      client = openClient({ url, journal }, flags, protocolVersion as ProtocolChoice);
      client.catch(() => clients.delete(key));
      clients.set(key, client);
    }
    return client;
  };
  // Several tasks at once share stderr: each reports on lines of its own, never one redrawn terminal line.
  const follow: FollowOptions = { signal: interrupt.signal, several: tasks.length + pending.length > 1, ...(deadline === undefined ? {} : { deadline }) };
  let codes: number[];
  try {
    codes = await Promise.all([
      ...tasks.map((entry) => resumeTask(entry, clientFor, flags, follow)),
      ...pending.map((call) => resumePending(call, clientFor, flags, follow)),
    ]);
  } finally {
    interrupt.dispose();
    for (const client of clients.values())
      await client.then(
        (open) => open.close(),
        () => {},
      );
  }
  process.exitCode = interrupt.signal.aborted ? ExitCode.interrupted : (codes.find((code) => code !== ExitCode.completed) ?? ExitCode.completed);
}

/** How `resume` follows each task: one deadline and one interrupt for all, and whether several run at once. */
interface FollowOptions {
  deadline?: number;
  signal: AbortSignal;
  several: boolean;
}

type ClientFor = (url: string, protocolVersion: string) => Promise<TasksClient>;

async function resumeTask(entry: JournalEntry, clientFor: ClientFor, flags: ResumeFlags, follow: FollowOptions): Promise<number> {
  process.stderr.write(`mcp-tasks: resuming task ${entry.taskId} (${entry.tool}, ${lastSeen(entry)}, ${entry.url})\n`);
  try {
    const client = await clientFor(entry.url, entry.protocolVersion);
    // This requestor created the task, so it knew its first run at least: a higher attempt now means the server re-ran
    // it since (its process died), even when no status was ever observed here (`call --detach`).
    return await followTask(client, entry.taskId, flags, { ...follow, label: entry.tool, knownAttempt: entry.lastAttempt ?? 1 });
  } catch (error) {
    return reportFailure(error, flags);
  }
}

async function resumePending(call: PendingCallEntry, clientFor: ClientFor, flags: ResumeFlags, follow: FollowOptions): Promise<number> {
  process.stderr.write(
    `mcp-tasks: taking up the call of ${call.tool} sent at ${call.sentAt} whose answer never arrived (correlation id ${call.correlationId})\n`,
  );
  try {
    const client = await clientFor(call.url, call.protocolVersion);
    const outcome = await client.resumeCall(call);
    if (outcome.kind === 'task') {
      process.stderr.write(`mcp-tasks: the server answered with task ${outcome.taskId}\n`);
      return await followTask(client, outcome.taskId, flags, { ...follow, label: call.tool });
    }
    if (outcome.kind === 'result') {
      if (follow.several) process.stderr.write(`mcp-tasks: the call of ${call.tool} (correlation id ${call.correlationId}) answered; its result follows\n`);
      return await printResult(outcome.result, flags, client, undefined, follow.signal);
    }
    return ExitCode.completed;
  } catch (error) {
    return reportFailure(error, flags);
  }
}

/**
 * What the journal knows of a task, as of when: "last seen working at <time this client observed it>". A status
 * read long ago is history, not the task's state now (a detached task may have ended since).
 */
export function lastSeen(entry: JournalEntry): string {
  // `observedAt` is this client's clock; the other two are the server's text (journaled as it sent them).
  if (!entry.lastStatus) return `no status seen since its creation at ${remoteTimestamp(entry.createdAt)}`;
  return `last seen ${entry.lastStatus} at ${entry.observedAt ?? remoteTimestamp(entry.lastUpdatedAt ?? entry.createdAt)}`;
}
