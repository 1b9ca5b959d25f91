#!/usr/bin/env node
import { Command, InvalidArgumentError, Option } from 'commander';
import { answerCommand } from './answer.js';
import { callCommand } from './call.js';
import { DEFAULT_URL, secondsOption } from './requestor.js';
import { demoCorpusCommand } from './demo-corpus.js';
import { protectDashTaskIds } from './task-id-argument.js';
import { cancelCommand, getCommand, watchCommand } from './task-commands.js';
import { inspectCommand } from './inspect.js';
import { resumeCommand, tasksCommand } from './journal-commands.js';
import { ExitCode, StartupError, UsageError } from './usage-error.js';

/** Parse a non-negative integer option (milliseconds, counts). */
export function integerOption(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0) throw new InvalidArgumentError('expected a non-negative integer');
  return parsed;
}

/** Parse a positive integer option. */
function positiveIntegerOption(value: string): number {
  const parsed = integerOption(value);
  if (parsed === 0) throw new InvalidArgumentError('expected a positive integer');
  return parsed;
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

const program = new Command();
program.name('mcp-tasks').description('Durable MCP tasks: server, requestor CLI and tools').showHelpAfterError();
program.exitOverride((error) => {
  process.exit(error.exitCode === 0 ? 0 : ExitCode.usage);
});

/**
 * The flags `serve` and `worker` share: one settings resolver (`settings.ts`) reads them for both, so a worker runs
 * tools with the same roots, denied paths and limits as the API process.
 */
function withSharedOptions(command: Command): Command {
  return command
    .option('--data-dir <dir>', 'data directory (SQLite store, secret)', './data')
    .option('--store <store>', 'task store: postgres://… URL, or a SQLite file path (default: MCP_TASKS_STORE, else <data-dir>/tasks.db)')
    .option('--tools <module>', 'load tools from a module (repeatable)', collect, [])
    .option('--no-builtins', 'do not register the built-in tools (analyze_logs, audit_repository)')
    .option('--fixtures <name>', 'also register fixture tools ("conformance")')
    .option('--root <dir>', 'directory tools may read (repeatable; default: current directory and /var/log)', collect, [])
    .option('--writable-root <dir>', 'directory tools may delete in; registers cleanup_logs (repeatable; default: none)', collect, [])
    .option('--auth <spec>', 'authentication: tokens:<file> (JSON {"tokens":[{"token","issuer","subject","tenant"}]}); the file is never readable by tools')
    .option('--instance-id <id>', 'lease owner id of this process (default: random)')
    .option('--concurrency <n>', 'tools running at once', integerOption)
    .option('--lease-ms <ms>', 'lease length of running tasks', integerOption)
    .option('--default-ttl-ms <ms>', 'default task retention', integerOption)
    .option('--max-ttl-ms <ms>', 'maximum task retention', integerOption)
    .option('--runtime-limit-ms <ms>', 'longest single run of a tool', integerOption)
    .option('--poll-interval-ms <ms>', 'longest poll interval hint (young tasks get shorter ones)', integerOption)
    .option('--max-attempts <n>', 'runs per task before attempts_exhausted', integerOption)
    .option('--input-timeout-ms <ms>', 'how long a task may wait for an answer before it fails (input_timeout)', integerOption)
    .option('--idempotency-window-ms <ms>', 'how long a tools/call idempotency key holds, independent of the TTL (default 24 h)', integerOption)
    .option('--audit-retention-ms <ms>', 'how long audit entries are kept, independent of task TTLs (default 90 days)', integerOption)
    .option('--drain-ms <ms>', 'on SIGTERM, how long runs may finish before they are aborted (reason shutdown) and released (default 30000)', integerOption)
    .option('--log-level <level>', 'pino log level (logs go to stderr)', 'info');
}

// Each role loads only its own modules: a worker process never loads the MCP server code.
withSharedOptions(program.command('serve'))
  .description('serve MCP (2025-11-25 tasks and the 2026-07-28 Tasks Extension) on one HTTP endpoint or on stdio')
  .option('--port <port>', 'HTTP port', integerOption, 3100)
  .option('--host <host>', 'HTTP bind address', '127.0.0.1')
  .option('--stdio', 'serve on stdin/stdout instead of HTTP')
  .option('--no-worker', 'API only: run no tools and never hold a lease; tasks wait for `mcp-tasks worker` processes on the same store')
  .option('--allow-remote-unauthenticated', 'allow a non-loopback bind without --auth')
  .option('--allowed-hosts <hosts>', 'Host/Origin allow-list for a non-loopback bind (comma separated)', (value) => value.split(','))
  .action(async (options) => (await import('./serve.js')).serve(options));

withSharedOptions(program.command('worker'))
  .description('run tasks of the store (no MCP endpoint): claim by lease, run tools, renew, recover, sweep; SIGTERM drains')
  .option('--health-port <port>', 'serve GET /healthz on this port (default: none)', integerOption)
  .option('--health-host <host>', 'bind address of --health-port', '127.0.0.1')
  .action(async (options) => (await import('./worker.js')).worker(options));

/** The connection flags of every requestor command. */
function withConnectionOptions(command: Command): Command {
  return command
    .option('--url <url>', `MCP endpoint (default: the task's journal entry, then MCP_TASKS_URL, then ${DEFAULT_URL})`)
    .addOption(new Option('--protocol <version>', 'auto tries 2026-07-28, then 2025-11-25 (default: the journal entry, else auto)').choices(['auto', '2025-11-25', '2026-07-28']))
    .option('--token <token>', 'bearer token (default: MCP_TASKS_TOKEN, which stays out of the process list)')
    .option('--json', 'machine-readable JSON on stdout');
}

const EXIT_CODES = 'exit codes: 0 completed, 1 tool error, 2 failed, 3 cancelled, 4 unknown or expired task, 5 connection or protocol error, 7 refused by policy (nothing sent) or handed off, 8 outcome unknown (not treated as failed), 64 usage, 124 timed out (task keeps running), 130 interrupted (detached)';

const ANSWERS_HELP = `answers (--answers '<json>'):
  {"confirm": true}                   field values shared by every question (each takes the fields its form has)
  {"input-2": {"confirm": false}}     values for the question with that key (wins over shared values)
  [{"confirm": true}, {"action": "decline"}]   one entry per question, in the order they are asked
  an entry may be {"action": "decline"}, {"action": "cancel"} or {"action": "accept", "content": {...}};
  values are JSON typed as the form asks (true, 3, "text", ["a","b"]); missing optional fields take their default.
  Questions not covered are asked with a form on a terminal; otherwise they wait for: mcp-tasks answer <taskId>`;

withConnectionOptions(program.command('call <tool>'))
  .description('call a tool as a durable task: task id and live status on stderr, result on stdout (Ctrl-C detaches)')
  .option('--args <json>', 'tool arguments as a JSON object; relative "path"/"root" become absolute', '{}')
  .option('--detach', 'print the task id and exit once the task exists')
  .option('--timeout <sec>', 'stop waiting after this many seconds (the task keeps running)', secondsOption)
  .option('--ttl-ms <ms>', 'requested task retention (2025-11-25 only; the server may lower it)', integerOption)
  .option('--answers <json>', 'answers for the questions the tool asks (see below); without them a terminal shows a form')
  .option('--detach-on-input', 'exit with code 6 at a question nobody answers here, instead of waiting for `mcp-tasks answer`')
  .addOption(new Option('--task <policy>', 'task policy, decided against the server\'s manifest before sending: required, preferred or forbidden').choices(['required', 'preferred', 'forbidden']))
  .addOption(new Option('--fallback <fallback>', 'when the policy cannot be met: sync (inline, bounded by --max-sync-ms), reject (exit 7) or handoff (a JSON record on stdout, exit 7); default reject').choices(['sync', 'reject', 'handoff']))
  .option('--max-sync-ms <ms>', 'bound of --fallback sync, the HTTP request timeout (default: --timeout, else 300000)', positiveIntegerOption)
  .addHelpText('after', `\n${ANSWERS_HELP}\n\n${EXIT_CODES}, 6 input needed (the task waits; answer it with mcp-tasks answer)\njournal of unfinished tasks: MCP_TASKS_CLIENT_STATE or ~/.mcp-tasks/tasks.json`)
  .action(callCommand);

withConnectionOptions(program.command('get <taskId>')).description("print a task's current state").action(getCommand);

withConnectionOptions(program.command('watch <taskId>'))
  .description('follow a task until it ends and print its result (Ctrl-C detaches)')
  .option('--timeout <sec>', 'stop waiting after this many seconds (the task keeps running)', secondsOption)
  .addHelpText('after', `\n${EXIT_CODES}`)
  .action(watchCommand);

withConnectionOptions(program.command('cancel <taskId>'))
  .description('ask the server to cancel a task, then report its final outcome (a task can still end completed)')
  .option('--timeout <sec>', 'how long to wait for the final outcome (default 30)', secondsOption)
  .action(cancelCommand);

withConnectionOptions(program.command('inspect'))
  .description("print the server's capability manifest: protocol, generation, session evidence, task operations, per-tool task mode")
  .action(inspectCommand);

program
  .command('tasks')
  .description('list the journal: unfinished tasks (last status, lastUpdatedAt, correlation id) and calls whose answer never arrived')
  .option('--json', 'machine-readable JSON on stdout')
  .addHelpText('after', '\njournal: MCP_TASKS_CLIENT_STATE or ~/.mcp-tasks/tasks.json')
  .action(tasksCommand);

program
  .command('resume')
  .description('follow every unfinished task of the journal to its end and print the results; take up calls whose answer never arrived')
  .option('--url <url>', 'only tasks of this endpoint')
  .option('--token <token>', 'bearer token (default: MCP_TASKS_TOKEN)')
  .option('--json', 'machine-readable JSON on stdout')
  .option('--timeout <sec>', 'stop waiting after this many seconds (the tasks keep running)', secondsOption)
  .addHelpText('after', `\n${EXIT_CODES}`)
  .action(resumeCommand);

withConnectionOptions(program.command('answer <taskId>'))
  .description('answer the questions a task waits on (from --answers, or a form on a terminal), then exit; the task goes on')
  .option('--answers <json>', 'answers for the waiting questions (see below)')
  .addHelpText('after', `\n${ANSWERS_HELP}\n\nexit codes: 0 answered (or nothing waiting), 4 unknown or expired task, 5 connection or protocol error, 6 questions left unanswered, 64 usage`)
  .action(answerCommand);

const ops = program.command('ops').description('the operation ledger (operators; reads the store given by --store/--data-dir): list, show, reconcile');
const withOpsFilters = (command: Command): Command =>
  withSharedOptions(command).option('--owner <ownerKey>', 'only operations of this owner (issuer|subject|tenant)').option('--json', 'machine-readable JSON on stdout');
withOpsFilters(ops.command('list'))
  .description('list open operations (pending, unknown): effect, target, task, owner, receipt')
  .option('--task <taskId>', 'only operations of this task')
  .option('--status <list>', 'comma separated statuses (pending, confirmed, failed, unknown)')
  .option('--all', 'every status')
  .option('--limit <n>', 'at most this many (default 100)', integerOption)
  .action(async (options) => (await import('./ops.js')).opsList(options));
withOpsFilters(ops.command('show <operationId>')).description('print one operation').action(async (id, options) => (await import('./ops.js')).opsShow(id, options));
withOpsFilters(ops.command('reconcile <operationId>'))
  .description("ask the tool's reconciler (the system of record) whether the operation happened, and record the answer")
  .addHelpText('after', '\nexit codes: 0 confirmed or not applied, 4 no such operation, 8 outcome still unknown')
  .action(async (id, options) => (await import('./ops.js')).opsReconcile(id, options));

withSharedOptions(program.command('audit'))
  .description('print the audit trail of the store (--store/--data-dir): calls, task ends, approvals, operations, cancellations')
  .option('--since <time>', 'only entries at or after this ISO 8601 time, or this long ago (30m, 24h, 7d)')
  .option('--tool <name>', 'only entries of this tool')
  .option('--owner <ownerKey>', 'only entries of this owner (issuer|subject|tenant)')
  .option('--limit <n>', 'at most this many (default 1000)', integerOption)
  .option('--json', 'JSON lines on stdout')
  .action(async (options) => (await import('./audit.js')).auditCommand(options));

program
  .command('demo-corpus')
  .description('write a large synthetic tree of plain and gzipped logs (syslog, sshd, nginx, Hadoop, …) for the demo')
  .requiredOption('--out <dir>', 'target directory (created)')
  .option('--files <n>', 'number of log files', integerOption, 200)
  .option('--lines <n>', 'lines per file', integerOption, 10000)
  .option('--seed <n>', 'random seed; the same seed writes the same bytes', integerOption, 1)
  .option('--gzip-ratio <r>', 'share of files written gzipped (0–1)', Number, 0.3)
  .action(demoCorpusCommand);

program.parseAsync(protectDashTaskIds(process.argv)).catch((error: unknown) => {
  if (error instanceof UsageError) {
    process.stderr.write(`mcp-tasks: ${error.message}\n`);
    process.exit(ExitCode.usage);
  }
  if (error instanceof StartupError) {
    process.stderr.write(`mcp-tasks: ${error.message}\n`);
    process.exit(ExitCode.startupFailed);
  }
  process.stderr.write(`mcp-tasks: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(ExitCode.connectionOrProtocol);
});
