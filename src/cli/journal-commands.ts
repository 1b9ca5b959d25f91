import { TaskJournal, type JournalEntry, type PendingCallEntry, type ProtocolChoice, type TasksClient } from '../client/index.js';
import { detachOnInterrupt, followTask, openClient, printResult, reportFailure, resultExitCode, type RequestorFlags } from './requestor.js';
import { ExitCode } from './usage-error.js';

/** Options of `mcp-tasks resume`. */
export interface ResumeFlags extends RequestorFlags {
  /** `--timeout` in ms, for the whole command. */
  timeout?: number;
}

/**
 * `mcp-tasks tasks`: the journal — every task created and not yet delivered (id, tool, last observed status and
 * `lastUpdatedAt`, endpoint, generation, correlation id), and every call whose answer never arrived. Arguments of
 * pending calls are never printed. Exit 0.
 */
export async function tasksCommand(flags: RequestorFlags): Promise<void> {
  const journal = new TaskJournal(TaskJournal.defaultPath());
  const [tasks, pending] = await Promise.all([journal.list(), journal.listPending()]);
  const withoutArguments = pending.map(({ arguments: _hidden, ...call }) => call);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ journal: journal.path, tasks, pending: withoutArguments }, null, 2)}\n`);
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
      entry.lastStatus ?? '?',
      entry.lastUpdatedAt ?? entry.createdAt,
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
  if (pending.length > 0)
    process.stdout.write(`calls without an id: their outcome is unknown; mcp-tasks resume resends them only to a server that honours idempotency keys\n`);
}

/**
 * `mcp-tasks resume`: follow every unfinished task of the journal to its end, oldest first, and print each result
 * (`--url` limits it to one endpoint); then take up calls whose answer never arrived (see
 * {@link TasksClient.resumeCall}). Exit 0 when everything completed, else the exit code of the first that did not.
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
  const codes: number[] = [];
  try {
    for (const entry of tasks) {
      if (interrupt.signal.aborted) break;
      codes.push(await resumeTask(entry, clientFor, flags, deadline, interrupt.signal));
    }
    for (const call of pending) {
      if (interrupt.signal.aborted) break;
      codes.push(await resumePending(call, clientFor, flags, deadline, interrupt.signal));
    }
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

type ClientFor = (url: string, protocolVersion: string) => Promise<TasksClient>;

async function resumeTask(entry: JournalEntry, clientFor: ClientFor, flags: ResumeFlags, deadline: number | undefined, signal: AbortSignal): Promise<number> {
  process.stderr.write(`mcp-tasks: resuming task ${entry.taskId} (${entry.tool}, last seen ${entry.lastStatus ?? 'unknown'}, ${entry.url})\n`);
  try {
    const client = await clientFor(entry.url, entry.protocolVersion);
    return await followTask(client, entry.taskId, flags, { ...(deadline === undefined ? {} : { deadline }), signal });
  } catch (error) {
    return reportFailure(error, flags);
  }
}

async function resumePending(
  call: PendingCallEntry,
  clientFor: ClientFor,
  flags: ResumeFlags,
  deadline: number | undefined,
  signal: AbortSignal,
): Promise<number> {
  process.stderr.write(
    `mcp-tasks: taking up the call of ${call.tool} sent at ${call.sentAt} whose answer never arrived (correlation id ${call.correlationId})\n`,
  );
  try {
    const client = await clientFor(call.url, call.protocolVersion);
    const outcome = await client.resumeCall(call);
    if (outcome.kind === 'task') {
      process.stderr.write(`mcp-tasks: the server answered with task ${outcome.taskId}\n`);
      return await followTask(client, outcome.taskId, flags, { ...(deadline === undefined ? {} : { deadline }), signal });
    }
    if (outcome.kind === 'result') {
      printResult(outcome.result, flags);
      return resultExitCode(outcome.result);
    }
    return ExitCode.completed;
  } catch (error) {
    return reportFailure(error, flags);
  }
}
