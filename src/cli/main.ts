#!/usr/bin/env node
// The CLI's one command table (commander): every command and option of `mcp-tasks` is declared here, so `--help`,
// the generated reference (docs/reference/cli.md) and the configuration's flags read one place; the actions live in
// their own modules, loaded on use. It is over 500 lines for that reason: declarations, not logic.
import { readFileSync } from 'node:fs';

import { Command, InvalidArgumentError, Option } from 'commander';

import { remoteLine } from '../client/remote-text.js';
import type { AnswerFlags } from './answer.js';
import type { CallFlags } from './call.js';
import { ConfigError, flagsGiven, resolveConfig, type ResolvedConfig } from './config/resolve.js';
import type { DemoCorpusFlags } from './demo-corpus.js';
import type { ResumeFlags } from './journal-commands.js';
import { writeJson } from './json-output.js';
import type { RequestorFlags } from './requestor.js';
import { DEFAULT_URL, secondsOption } from './requestor-options.js';
import type { CancelFlags, WatchFlags } from './task-commands.js';
import { protectDashTaskIds } from './task-id-argument.js';
import { ExitCode, StartupError, UsageError } from './usage-error.js';
import type { VerifyFlags } from './verify.js';

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

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/** The limits with a flag of their own, with their help (every limit also has a variable and a file key). */
const LIMIT_FLAGS: ReadonlyArray<[string, string]> = [
  ['--concurrency <n>', 'tools running at once'],
  ['--lease-ms <ms>', 'lease length of running tasks'],
  ['--default-ttl-ms <ms>', 'default task retention ("unlimited" for none)'],
  ['--max-ttl-ms <ms>', 'maximum task retention ("unlimited" for none)'],
  ['--min-ttl-ms <ms>', 'minimum task retention'],
  ['--runtime-limit-ms <ms>', 'longest single run of a tool'],
  ['--poll-interval-ms <ms>', 'poll hint up to age 10 s (younger tasks: shorter; older: 10 % of age, ≤ 30 s)'],
  ['--max-attempts <n>', 'runs per task before attempts_exhausted'],
  ['--input-timeout-ms <ms>', 'how long a task may wait for an answer before it fails (input_timeout)'],
  ['--inline-grace-ms <ms>', '2026-07-28: answer inline when a task-optional call completes within this (0: always a task)'],
  ['--structured-content-max-bytes <n>', 'warn (log, metric) when a tool result carries more structuredContent JSON than this'],
  ['--progress-keep-alive-ms <ms>', 'longest silence of an inline call with a progressToken before a keep-alive notifications/progress'],
  ['--recovery-interval-ms <ms>', 'interval of the lapsed-lease scan (default: --lease-ms)'],
  ['--claim-interval-ms <ms>', 'fallback claim interval'],
  ['--sweep-interval-ms <ms>', 'interval of the TTL sweeper'],
  ['--tail-interval-ms <ms>', 'interval of the cross-process event tail'],
  ['--status-flush-interval-ms <ms>', 'window coalescing statusMessage writes'],
  ['--list-page-size <n>', 'v1 tasks/list page size (1–100)'],
  ['--max-request-body-bytes <bytes>', 'largest HTTP request body (larger: HTTP 413)'],
  ['--session-idle-ms <ms>', '2025-era HTTP sessions idle longer are closed'],
  ['--max-sessions <n>', 'most 2025-era HTTP sessions kept at once'],
  ['--max-argument-bytes <bytes>', 'largest tools/call arguments, bytes of JSON (default 1048576); larger → -32602'],
  ['--max-argument-depth <levels>', 'deepest nesting of tools/call arguments (default 32); deeper → -32602'],
  [
    '--max-active-tasks-per-owner <n>',
    'most working/input_required, unexpired tasks per owner, counted exactly in the transaction of the create ("unlimited" for none, the default); more → -31001 active_tasks',
  ],
  [
    '--max-creates-per-minute <n>',
    'most task creates per owner in any 60 s, counted in the store ("unlimited" for none, the default); more → -31001 create_rate with retryAfterMs',
  ],
  [
    '--max-result-bytes <bytes>',
    'largest tool result stored inline, bytes of JSON (default 4194304); larger → first part + resource_link read with resources/read',
  ],
  ['--max-stored-result-bytes <bytes>', 'largest tool result kept at all, bytes of JSON (default 67108864); larger → the task fails with result_too_large'],
  ['--min-result-retention-ms <ms>', 'least time the default TTL keeps the result of a run that hit the runtime limit (default 600000)'],
  ['--idempotency-window-ms <ms>', 'how long a tools/call idempotency key holds, independent of the TTL (default 24 h)'],
  ['--audit-retention-ms <ms>', 'how long audit entries are kept, independent of task TTLs (default 90 days)'],
  ['--abort-grace-ms <ms>', 'how long a cancelled, timed-out or drained tool may take to stop before its thread is terminated (default 5000)'],
];

/** The package's version (`--version`), read from the package.json next to dist/ (or src/). */
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/**
 * `--json` on the command line as a flag of its own (not `verify --json <file>`): errors are then one JSON object on
 * stdout too, also those found before a command runs (an unknown option, a bad value).
 */
const jsonRequested = (argv: readonly string[]): boolean => argv.includes('--json') && !argv.slice(2).includes('verify');

/** Print a bad-input error as `--json` asks, then exit 64. */
function exitBadInput(message: string): never {
  if (jsonRequested(process.argv)) writeJson({ status: 'bad_input', exitCode: ExitCode.usage, error: { message } });
  process.exit(ExitCode.usage);
}

const program = new Command();
program
  .name('mcp-tasks')
  .description('Durable MCP tasks: server, requestor CLI and tools')
  .version(VERSION, '-V, --version', 'print the version of mcp-tasks')
  .showHelpAfterError()
  .addHelpText('after', '\nexit codes (every command): docs/reference/error-codes.md#exit-codes-of-the-cli-exitcode');
program.exitOverride((error) => {
  if (error.exitCode === 0) process.exit(0); // --help, --version
  exitBadInput(error.message.replace(/^error: /, ''));
});

/**
 * The configuration flags of `serve`, `worker`, `config print` and `manifest`: one resolver (`config/resolve.ts`)
 * reads them with the environment and the `--config` file, so a worker runs tools with the same roots, denied
 * paths and limits as the API process. Flags carry no defaults and numbers stay text here: the resolver fills in
 * defaults below the environment and the file, and reports every invalid value at once.
 */
function withSharedOptions(command: Command): Command {
  command
    .option('--config <file>', 'configuration file (JSON, see mcp-tasks.schema.json; default: MCP_TASKS_CONFIG); precedence: flag > env > file > default')
    .option('--data-dir <dir>', 'data directory (SQLite store, secret) (default ./data)')
    .option('--store <store>', 'task store: postgres://… URL, or a SQLite file path (default: MCP_TASKS_STORE, else <data-dir>/tasks.db)')
    .option('--tools <module>', 'load tools from a module (repeatable)', collect)
    .option('--no-builtins', 'do not register the built-in tools (analyze_logs, audit_repository, check_infrastructure)')
    .option(
      '--upstream <spec>',
      'an MCP server whose tools are listed as <name>_<tool>, each call a task forwarded to it: <name>=stdio:<command …> or <name>=http(s)://…/mcp (repeatable; policy per tool: upstreamTools in the config file)',
      collect,
    )
    .option(
      '--upstream-start-timeout-ms <ms>',
      "longest wait for an upstream's initialize and tools/list answers, at start and at each reconnect; past it the upstream's process is ended (default 30000)",
    )
    .option(
      '--upstream-forward-identity <name>',
      "send the caller's identity (issuer, subject, tenant of the owner key) to the HTTP upstream <name> as MCP-Tasks-Caller-* headers on each call; only for an upstream that nothing but this server can reach (repeatable)",
      collect,
    )
    .option(
      '--upstream-allow-data-dir <name>',
      "let the stdio upstream <name> be given this server's data directory (or a directory holding it) as an argument; refused by default (repeatable)",
      collect,
    )
    .option(
      '--fixtures <name>',
      'also register fixture tools: "conformance" (the official suite\'s tasks tools) or "verify" (those plus the side-effect counter mcp-tasks verify uses)',
    )
    .option('--root <dir>', 'directory tools may read (repeatable; default: current directory and /var/log)', collect)
    .option('--writable-root <dir>', 'directory tools may delete in; registers cleanup_logs (repeatable; default: none)', collect)
    .option('--check-target <pattern>', 'host check_infrastructure may reach: name, *.domain, IP or CIDR, optional :port (repeatable; default: none)', collect)
    .option(
      '--auth <spec>',
      'authentication (serve): tokens:<file> (JSON {"tokens":[{"token","issuer","subject","tenant","scopes"?}]}, reloaded on change and SIGHUP) or jwt (OAuth access tokens, see --issuer); a token file is never readable by tools',
    )
    .option(
      '--instance-id <id>',
      'stable id of this process in the registry and its leases; a restart under the same id takes over its tasks at once (default: <host>:serve:<port>, <host>:worker[:<health port>]; more workers on one host take <host>:worker:slot2, …)',
    )
    .option('--heartbeat-ms <ms>', 'process registry heartbeat; a process is gone, its leases released, after three missed (default 1000)')
    .option(
      '--executor <mode>',
      'how tools run: isolated (each run in a worker thread; a blocking tool cannot stall leases or HTTP answers) or in-process (on the event loop; tests and tiny tools) (default isolated)',
    )
    .option('--min-threads <n>', 'isolated executor: threads that load the tools at start and stay loaded (the warm pool); start waits for them (default 1)')
    .option(
      '--thread-heap-mb <mb>',
      'isolated executor: JavaScript heap limit of each tool thread (Buffers and ArrayBuffers are outside it); a tool that exceeds it fails its run, never the process (default 1024)',
    )
    .option(
      '--drain-ms <ms>',
      'on SIGTERM, how long runs and requests in flight (a blocked tasks/result) may finish; then runs are aborted (reason shutdown) and released, and requests cut (default 30000)',
    )
    .option('--log-level <level>', 'pino log level (logs go to stderr) (default info)')
    .option(
      '--otlp-endpoint <url>',
      'export OpenTelemetry traces over OTLP/HTTP (JSON) to <url>/v1/traces (default: OTEL_EXPORTER_OTLP_ENDPOINT, else no tracing)',
    )
    .option(
      '--shadow-tool <name>',
      'shadow mode: compare the tasks of this tool with the job API its shadow adapter observes (repeatable; * = every tool with an adapter)',
      collect,
    )
    .option('--shadow-interval-ms <ms>', 'shadow mode: job poll interval while a task runs (default 1000)')
    .option('--shadow-settle-checks <n>', 'shadow mode: polls after the task ended while the job still says working (default 3)')
    .option('--service-name <name>', 'service.name of exported spans (default: OTEL_SERVICE_NAME, else mcp-tasks)')
    .option('--allow-unpinned', 'start although the pins of the configuration do not match what is installed and configured')
    .option(
      '--fail-unreadable-tasks',
      'start although unfinished tasks hold data under an at-rest key (MCP_TASKS_ENCRYPTION_KEY, MCP_TASKS_ENCRYPTION_KEYS_OLD) this process lacks, a lost or withdrawn key: it fails those tasks at start (task_unreadable), then runs as usual',
    )
    .option(
      '--kill-switch-fallback <fallback>',
      'fallback of a kill switch or canary set without one: sync (inline where the tool may run inline) or reject (-31003) (default reject)',
    )
    .option('--max-sync-ms <ms>', 'longest inline run of the sync fallback; past it the call fails with -31003 sync_timeout (default 30000)')
    .option('--kill-switch-refresh-ms <ms>', 'how often the stored kill switch is re-read (50–1000, default 500)');
  for (const [flag, help] of LIMIT_FLAGS) command.option(flag, help);
  return command;
}

/** The authentication flags of `serve` (also taken by `config print`, to show what serve would use). */
function withServeAuthOptions(command: Command): Command {
  return command
    .option('--issuer <url>', '--auth jwt: issuer identifier of the authorization server (its metadata gives the keys unless --jwks-url)')
    .option('--audience <url>', "--auth jwt: this server's public MCP URL, the resource tokens must be issued for (RFC 8707)")
    .option('--jwks-url <url>', "--auth jwt: the issuer's JSON Web Key Set (default: jwks_uri of its metadata)")
    .option('--tenant-claim <claim>', '--auth jwt: claim naming the tenant of the owner key issuer|subject|tenant (default tenant; absent = "")')
    .option('--scope-claim <claim>', '--auth jwt: claim holding the scopes (default scope, else scp)')
    .option('--jwks-max-age-ms <ms>', '--auth jwt: longest a fetched key set is trusted (a removed key stops working after it; default 600000)')
    .option('--jwks-cooldown-ms <ms>', '--auth jwt: shortest time between key-set fetches for unknown key ids (default 30000)')
    .option('--tool-scope <tool=scope>', 'scope a tools/call of this tool needs (repeatable, e.g. analyze_logs=logs:read)', collect);
}

/** Resolve the configuration of a command from its typed flags, the environment and its `--config` file. */
function configOf(command: Command): ResolvedConfig {
  const options = command.opts<Record<string, unknown>>();
  try {
    return resolveConfig({
      configFile: options.config as string | undefined,
      env: process.env,
      flags: flagsGiven(options, (name) => command.getOptionValueSource(name)),
    });
  } catch (error) {
    throw error instanceof ConfigError ? new UsageError(error.message) : error;
  }
}

// Each command loads only its own modules when it runs: a worker process never loads the MCP server code, and no
// process loads the client library, the verify suite or the built-in tools unless its command uses them.
withServeAuthOptions(withSharedOptions(program.command('serve')))
  .description('serve MCP (2025-11-25 tasks and the 2026-07-28 Tasks Extension) on one HTTP endpoint or on stdio')
  .option('--port <port>', 'HTTP port (default 3100)')
  .option('--host <host>', 'HTTP bind address (default 127.0.0.1)')
  .option('--stdio', 'serve on stdin/stdout instead of HTTP')
  .option('--no-worker', 'API only: run no tools and never hold a lease; tasks wait for `mcp-tasks worker` processes on the same store')
  .option(
    '--worker-absent-ms <ms>',
    '--no-worker: /readyz is not ready once no worker process of the store has been live for this long; a task no worker can start says "waiting for a worker" (default 30000; 0: never not ready)',
  )
  .option('--allow-remote-unauthenticated', 'allow a non-loopback bind without --auth')
  .option('--allowed-hosts <hosts>', 'Host/Origin allow-list for a non-loopback bind (comma separated)')
  .option(
    '--task-fallback-tools',
    'for clients that declare no task support (2025-era without capabilities.tasks, 2026-07-28 without the Tasks Extension): task-required tools answer with a task id, followed through get_task_status / get_task_result / cancel_task',
  )
  .option('--dashboard', 'also serve the web dashboard at /dashboard on the same port (same authentication)')
  .option('--dashboard-client-id <id>', 'auth jwt: the dashboard signs in at the issuer as this public client (authorization code + PKCE)')
  .option('--dashboard-scopes <scopes>', 'auth jwt: scopes the dashboard sign-in asks for (default "tasks:read tasks:cancel tasks:answer")')
  .option('--dashboard-redirect-uri <url>', 'auth jwt: redirect URI registered for the client (default <origin>/dashboard/callback)')
  .option('--dashboard-secure-cookie', 'mark the dashboard session cookie Secure (behind TLS)')
  .option('--dashboard-session-ttl-ms <ms>', 'dashboard session lifetime (default 28800000)')
  .action(async (options: { stdio?: boolean; worker: boolean; allowUnpinned?: boolean; failUnreadableTasks?: boolean }, command: Command) =>
    (await import('./serve.js')).serve(configOf(command), {
      worker: options.worker,
      ...(options.stdio ? { stdio: true } : {}),
      ...(options.allowUnpinned ? { allowUnpinned: true } : {}),
      ...(options.failUnreadableTasks ? { failUnreadableTasks: true } : {}),
    }),
  );

withSharedOptions(program.command('worker'))
  .description('run tasks of the store (no MCP endpoint): claim by lease, run tools, renew, recover, sweep; SIGTERM drains')
  .option('--health-port <port>', 'serve GET /healthz, /readyz and /metrics on this port (default: none)')
  .option('--health-host <host>', 'bind address of --health-port (default 127.0.0.1)')
  .action(async (options: { allowUnpinned?: boolean; failUnreadableTasks?: boolean }, command: Command) =>
    (await import('./worker.js')).worker(configOf(command), {
      ...(options.allowUnpinned ? { allowUnpinned: true } : {}),
      ...(options.failUnreadableTasks ? { failUnreadableTasks: true } : {}),
    }),
  );

const configCommand = program.command('config').description('the effective configuration');
withServeAuthOptions(withSharedOptions(configCommand.command('print')))
  .description('print the effective configuration of serve/worker with these flags, the environment and --config: each value with its source; secrets masked')
  .option('--port <port>', 'as serve --port')
  .option('--host <host>', 'as serve --host')
  .option('--allow-remote-unauthenticated', 'as serve')
  .option('--allowed-hosts <hosts>', 'as serve')
  .option('--health-port <port>', 'as worker --health-port')
  .option('--health-host <host>', 'as worker --health-host')
  .option('--json', 'machine-readable JSON on stdout')
  .action(async (options: { json?: boolean }, command: Command) => (await import('./config-print.js')).configPrint(configOf(command), options.json === true));

withSharedOptions(program.command('manifest'))
  .description('print the capability manifest this configuration advertises, per generation (the type `inspect --json` reads from a live server)')
  .option('--json', 'machine-readable JSON on stdout (diff it against `mcp-tasks inspect --json`)')
  .action(async (options: { json?: boolean }, command: Command) => (await import('./manifest.js')).manifestCommand(configOf(command), options.json === true));

/** The connection flags of every requestor command. */
function withConnectionOptions(command: Command): Command {
  return command
    .option('--url <url>', `MCP endpoint (default: the task's journal entry, then MCP_TASKS_URL, then ${DEFAULT_URL})`)
    .addOption(
      new Option('--protocol <version>', 'auto tries 2026-07-28, then 2025-11-25 (default: the journal entry, else auto)').choices([
        'auto',
        '2025-11-25',
        '2026-07-28',
      ]),
    )
    .option('--token <token>', 'bearer token (default: MCP_TASKS_TOKEN, which stays out of the process list)')
    .option('--json', 'machine-readable JSON on stdout');
}

const EXIT_CODES =
  'exit codes: 0 completed, 1 tool error (isError), 2 failed, 3 cancelled, 4 unknown or expired task, 5 connection or protocol error, 7 refused (by policy, nothing sent; or by the server: a quota, its kill switch; nothing ran) or handed off, 8 outcome unknown (not treated as failed), 64 bad input (usage, unknown tool, refused arguments), 124 timed out (task keeps running), 130 interrupted (detached)';

const ANSWERS_HELP = `answers (--answers '<json>'):
  {"confirm": true}                   field values shared by every question (each takes the fields its form has)
  {"input-2": {"confirm": false}}     values for the question with that key (wins over shared values)
  [{"confirm": true}, {"action": "decline"}]   one entry per question, in the order they are asked
  an entry may be {"action": "decline"}, {"action": "cancel"} or {"action": "accept", "content": {...}};
  values are JSON typed as the form asks (true, 3, "text", ["a","b"]); missing optional fields take their default.
  Questions not covered are asked with a form on a terminal; otherwise they wait for: mcp-tasks answer <taskId>`;

program
  .command('doctor')
  .description(
    "check a deployment's task store, reading only: reachability, schema version, clock skew, tasks no worker takes, orphaned events, processes and their settings digests, whether this host's server secret is the one the store's instances use, and which at-rest keys unfinished tasks need; exit 1 on any FAIL",
  )
  .option('--store <store>', 'postgres://… URL or SQLite file (default: MCP_TASKS_STORE, else <data-dir>/tasks.db)')
  .option('--data-dir <dir>', 'data directory of an embedded store (default: MCP_TASKS_DATA_DIR, else ./data)')
  .option('--max-skew-ms <ms>', "largest tolerated difference between this host's clock and the database's", integerOption, 1000)
  .option(
    '--check-threads',
    "also start the isolated executor's warm pool with the configured tools (--config, environment, the flags below) and report whether they load in a worker thread, how long a thread takes and what it costs in memory",
  )
  .option('--config <file>', 'configuration file, read for the store, the data directory and the secret as serve reads them (default: MCP_TASKS_CONFIG)')
  .option('--tools <module>', '--check-threads: load tools from a module (repeatable)', collect)
  .option('--no-builtins', '--check-threads: without the built-in tools')
  .option('--fixtures <name>', '--check-threads: also the fixture tools ("conformance" or "verify")')
  .option('--min-threads <n>', '--check-threads: threads of the warm pool (default 1)')
  .option('--thread-heap-mb <mb>', '--check-threads: heap limit of each tool thread (default 1024)')
  .option(
    '--check-upstreams',
    'also connect to the configured upstream MCP servers as serve would and report the tools each lists (stdio children are ended afterwards)',
  )
  .option('--upstream <spec>', '--check-upstreams: an upstream as serve takes it (repeatable; default: upstreams of the configuration file)', collect)
  .action(async (options, command: Command) => {
    process.exitCode = await (await import('./doctor.js')).doctor(options, configOf(command));
  });

withConnectionOptions(program.command('call <tool>'))
  .description('call a tool as a durable task: task id and live status on stderr, result on stdout (Ctrl-C detaches)')
  .option(
    '--args <json>',
    'tool arguments as a JSON object; a relative path becomes absolute only where the tool declares the argument a local path ("x-mcp-tasks-local-path" in its inputSchema)',
    '{}',
  )
  .option('--detach', 'print the task id and exit once the task exists')
  .option('--timeout <sec>', 'stop waiting after this many seconds (the task keeps running)', secondsOption)
  .option(
    '--output <file>',
    'write the result to <file> instead of stdout; a result too large to send inline is read back in full (with --json: the whole CallToolResult)',
  )
  .option('--ttl-ms <ms>', 'requested task retention (2025-11-25 only; the server may lower it)', integerOption)
  .option('--answers <json>', 'answers for the questions the tool asks (see below); without them a terminal shows a form')
  .option('--detach-on-input', 'exit with code 6 at a question nobody answers here, instead of waiting for `mcp-tasks answer`')
  .addOption(
    new Option('--task <policy>', "task policy, decided against the server's manifest before sending: required, preferred or forbidden").choices([
      'required',
      'preferred',
      'forbidden',
    ]),
  )
  .addOption(
    new Option(
      '--fallback <fallback>',
      'when the policy cannot be met: sync (inline, bounded by --max-sync-ms), reject (exit 7) or handoff (a JSON record on stdout, exit 7); default reject',
    ).choices(['sync', 'reject', 'handoff']),
  )
  .option('--max-sync-ms <ms>', 'bound of --fallback sync, the HTTP request timeout (default: --timeout, else 300000)', positiveIntegerOption)
  .addHelpText(
    'after',
    `\n${ANSWERS_HELP}\n\n${EXIT_CODES}, 6 input needed (the task waits; answer it with mcp-tasks answer)\njournal of unfinished tasks: MCP_TASKS_CLIENT_STATE or ~/.mcp-tasks/tasks.json`,
  )
  .action(async (tool: string, flags: CallFlags) => (await import('./call.js')).callCommand(tool, flags));

withConnectionOptions(program.command('get <taskId>'))
  .description("print a task's current state")
  .action(async (taskId: string, flags: RequestorFlags) => (await import('./task-commands.js')).getCommand(taskId, flags));

withConnectionOptions(program.command('watch <taskId>'))
  .description('follow a task until it ends and print its result (Ctrl-C detaches)')
  .option('--timeout <sec>', 'stop waiting after this many seconds (the task keeps running)', secondsOption)
  .option(
    '--output <file>',
    'write the result to <file> instead of stdout; a result too large to send inline is read back in full (with --json: the whole CallToolResult)',
  )
  .addHelpText('after', `\n${EXIT_CODES}`)
  .action(async (taskId: string, flags: WatchFlags) => (await import('./task-commands.js')).watchCommand(taskId, flags));

withConnectionOptions(program.command('cancel <taskId>'))
  .description('ask the server to cancel a task, then report its final outcome (a task can still end completed)')
  .option('--timeout <sec>', 'how long to wait for the final outcome (default 30)', secondsOption)
  .addHelpText(
    'after',
    '\nexit codes: 0 cancelled, 9 not cancelled: it ended another way (completed, failed) before the cancellation took effect, 4 unknown or expired task, 5 connection or protocol error, 64 bad input, 124 not final within --timeout',
  )
  .action(async (taskId: string, flags: CancelFlags) => (await import('./task-commands.js')).cancelCommand(taskId, flags));

withConnectionOptions(program.command('inspect'))
  .description("print the server's capability manifest: protocol, generation, session evidence, task operations, per-tool task mode")
  .action(async (flags: RequestorFlags) => (await import('./inspect.js')).inspectCommand(flags));

program
  .command('tasks')
  .description(
    'list the journal (asks no server): unfinished tasks (status as last seen here and when, lastUpdatedAt, correlation id) and calls whose answer never arrived',
  )
  .option('--json', 'machine-readable JSON on stdout')
  .addHelpText('after', '\njournal: MCP_TASKS_CLIENT_STATE or ~/.mcp-tasks/tasks.json')
  .action(async (flags: RequestorFlags) => (await import('./journal-commands.js')).tasksCommand(flags));

program
  .command('resume')
  .description(
    'follow every unfinished task of the journal to its end, all at once, printing each result as it arrives; take up calls whose answer never arrived',
  )
  .option('--url <url>', 'only tasks of this endpoint')
  .option('--token <token>', 'bearer token (default: MCP_TASKS_TOKEN)')
  .option('--json', 'machine-readable JSON on stdout')
  .option('--timeout <sec>', 'one deadline for all: stop waiting after this many seconds (the tasks keep running)', secondsOption)
  .option(
    '--output <file>',
    'with one task (or call) to resume: write its result to <file> instead of stdout, as watch --output does; narrow with --url when there are several',
  )
  .addHelpText('after', `\n${EXIT_CODES}`)
  .action(async (flags: ResumeFlags) => (await import('./journal-commands.js')).resumeCommand(flags));

withConnectionOptions(program.command('answer <taskId>'))
  .description('answer the questions a task waits on (from --answers, or a form on a terminal), then exit; the task goes on')
  .option('--answers <json>', 'answers for the waiting questions (see below)')
  .addHelpText(
    'after',
    `\n${ANSWERS_HELP}\n\nexit codes: 0 answered (or nothing waiting), 4 unknown or expired task, 5 connection or protocol error, 6 questions left unanswered, 64 bad input`,
  )
  .action(async (taskId: string, flags: AnswerFlags) => (await import('./answer.js')).answerCommand(taskId, flags));

/** `--url` / `--token-file` of the operator commands: the server's /admin/… API instead of the store. */
const withAdminUrl = (command: Command): Command =>
  command
    .option('--url <url>', "a server's URL (e.g. http://127.0.0.1:3100): use its /admin/ API instead of opening the store")
    .option('--token-file <file>', 'bearer token for --url, read from this file (default: MCP_TASKS_TOKEN)');

const ops = program.command('ops').description('the operation ledger (operators; reads the store given by --store/--data-dir): list, show, reconcile');
const withOpsFilters = (command: Command): Command =>
  withSharedOptions(command)
    .option('--owner <ownerKey>', 'only operations of this owner (issuer|subject|tenant)')
    .option('--json', 'machine-readable JSON on stdout');
withAdminUrl(withOpsFilters(ops.command('list')))
  .description('list open operations (pending, unknown): effect, target, task, owner, receipt')
  .option('--task <taskId>', 'only operations of this task')
  .option('--status <list>', 'comma separated statuses (pending, confirmed, failed, unknown)')
  .option('--all', 'every status')
  .option('--limit <n>', 'at most this many (default 100)', integerOption)
  .action(async (options, command: Command) => (await import('./ops.js')).opsList(configOf(command), options));
withOpsFilters(ops.command('show <operationId>'))
  .description('print one operation')
  .action(async (id: string, options, command: Command) => (await import('./ops.js')).opsShow(configOf(command), id, options));
withOpsFilters(ops.command('reconcile <operationId>'))
  .description("ask the tool's reconciler (the system of record) whether the operation happened, and record the answer")
  .addHelpText('after', '\nexit codes: 0 confirmed or not applied, 4 no such operation, 8 outcome still unknown')
  .action(async (id: string, options, command: Command) => (await import('./ops.js')).opsReconcile(configOf(command), id, options));

withAdminUrl(withSharedOptions(program.command('audit')))
  .description('print the audit trail of the store (--store/--data-dir): calls, task ends, approvals, operations, cancellations')
  .option('--since <time>', 'only entries at or after this ISO 8601 time, or this long ago (30m, 24h, 7d)')
  .option('--tool <name>', 'only entries of this tool')
  .option('--owner <ownerKey>', 'only entries of this owner (issuer|subject|tenant)')
  .option('--limit <n>', 'at most this many (default 1000)', integerOption)
  .option('--json', 'JSON lines on stdout')
  .action(async (options, command: Command) => (await import('./audit.js')).auditCommand(configOf(command), options));

const admin = program
  .command('admin')
  .description('operate a deployment: kill switch, rollback watcher, shadow report (the store of --store/--data-dir, or a server with --url)');
withAdminUrl(withSharedOptions(admin.command('kill-switch <action>')))
  .description('on | off | status: switch task mode off for every tool or one (--tool); new task-augmented calls get the fallback, existing tasks go on')
  .option('--tool <name>', 'only this tool (a tool switch wins over the global one)')
  .addOption(
    new Option(
      '--fallback <fallback>',
      "with on: what new task-augmented calls get: sync (inline, bounded by the server's --max-sync-ms; only tools that may run inline, only where the server decides) or reject (-31003) (default: the server's --kill-switch-fallback)",
    ).choices(['sync', 'reject']),
  )
  .option('--reason <text>', 'with on: why (kept with the switch, shown by status)')
  .option('--json', 'machine-readable JSON on stdout')
  .addHelpText('after', '\nexit codes: 0 done, 5 server unreachable or refused (401/403), 64 usage or refused input')
  .action(async (action: string, options, command: Command) => (await import('./admin.js')).killSwitchCommand(configOf(command), action, options));
withAdminUrl(withSharedOptions(admin.command('watch')))
  .description('rollback watcher: list non-terminal tasks and open domain operations, refreshing, until all are terminal')
  .option('--once', 'print once and exit: 0 when nothing is in flight, 1 otherwise')
  .option('--interval-ms <ms>', 'refresh interval (default 2000)', positiveIntegerOption)
  .option('--limit <n>', 'at most this many tasks and operations each (default 100)', positiveIntegerOption)
  .option('--timeout <sec>', 'give up after this many seconds (exit 124)', secondsOption)
  .option('--json', 'one JSON object per refresh on stdout')
  .addHelpText('after', '\nexit codes: 0 all terminal, 1 still in flight (--once), 5 server unreachable or refused, 124 --timeout')
  .action(async (options, command: Command) => (await import('./admin.js')).watchAdminCommand(configOf(command), options));
withSharedOptions(admin.command('shadow-report'))
  .description('the differences shadow mode recorded between tasks and the job API they shadow, oldest first, counted per tool')
  .option('--since <when>', 'only since this ISO 8601 time or duration ago (30m, 24h, 7d)')
  .option('--tool <name>', 'only this tool')
  .option('--json', 'machine-readable JSON on stdout')
  .action(async (options: { since?: string; tool?: string; json?: boolean }, command: Command) =>
    (await import('./shadow-report.js')).shadowReport(configOf(command), options),
  );

program
  .command('verify')
  .description('run the contract, fault, security and load suite against any MCP tasks server; a verdict per gate')
  .option('--url <url>', 'MCP endpoint to verify')
  .addOption(new Option('--protocol <version>', 'generations to verify').choices(['2025-11-25', '2026-07-28', 'both']).default('both'))
  .option('--token-a <token>', 'bearer token of principal A (default: MCP_TASKS_VERIFY_TOKEN_A)')
  .option('--token-b <token>', 'bearer token of a second principal B, for the cross-owner checks (default: MCP_TASKS_VERIFY_TOKEN_B)')
  .option('--tools-map <file>', 'JSON tool map: which tools are slow, fail, throw, ask for input, count side effects; server facts; thresholds')
  .option('--only <ids>', 'run only these checks: ids, globs (v1.*), gates (security) or rule ids (C-SEC-02); comma separated, repeatable', collect, [])
  .option('--exclude <ids>', 'leave these checks out (same patterns as --only)', collect, [])
  .option('--fail-on <gates>', 'gates whose failures decide the exit code: hard (contract,security; default), all, or a list')
  .option(
    '--threshold <name=value>',
    'set a threshold (loadTasks, loadTaskMs, pollClients, pollWindowMs, maxPollSlowdown, backpressureTasks, maxCreateMs, maxTtlWaitMs, idSample, minIdBits, maxStatusChars, loadBudgetMs); repeatable',
    collect,
    [],
  )
  .option('--parallel <n>', 'checks run at once (the load gate always runs alone)', positiveIntegerOption, 4)
  .option('--check-timeout-ms <ms>', 'longest one check may run', positiveIntegerOption, 60_000)
  .option('--request-timeout-ms <ms>', 'longest one request may wait for its answer (a hang is a failure)', positiveIntegerOption, 15_000)
  .option('--json <file>', 'write the full report with every check\'s evidence as JSON ("-": stdout, the table then goes to stderr)')
  .option('--junit <file>', 'write a JUnit XML report')
  .option('--list', 'list the checks (with --json: as JSON) and exit')
  .option('--quiet', 'no progress lines on stderr')
  .addHelpText(
    'after',
    '\nexit codes: 0 every selected check of the deciding gates passed, 1 one failed, 2 none failed but some were skipped (not verified), 5 server unreachable, 64 usage',
  )
  .action(async (flags: VerifyFlags) => (await import('./verify.js')).verifyCommand(flags));

program
  .command('demo-corpus')
  .description('write a large synthetic tree of plain and gzipped logs (syslog, sshd, nginx, Hadoop, …) for the demo')
  .requiredOption('--out <dir>', 'target directory (created)')
  .option('--files <n>', 'number of log files', integerOption, 200)
  .option('--lines <n>', 'lines per file', integerOption, 10000)
  .option('--seed <n>', 'random seed; the same seed writes the same bytes', integerOption, 1)
  .option('--gzip-ratio <r>', 'share of files written gzipped (0–1)', Number, 0.3)
  .action(async (flags: DemoCorpusFlags) => (await import('./demo-corpus.js')).demoCorpusCommand(flags));

// A reader that stopped early (`mcp-tasks tasks | head -2`): what is left to print is dropped and the command ends with
// its own exit code, not with an unhandled EPIPE stack (only one 'error' is emitted per stream). Not serve and worker:
// on stdio, stdout is the protocol, whose transport handles a client that went away.
if (!['serve', 'worker'].includes(process.argv[2] ?? ''))
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });

program.parseAsync(protectDashTaskIds(process.argv)).catch((error: unknown) => {
  if (error instanceof UsageError) {
    process.stderr.write(`mcp-tasks: ${error.message}\n`);
    exitBadInput(error.message);
  }
  if (error instanceof StartupError) {
    process.stderr.write(`mcp-tasks: ${error.message}\n`);
    process.exit(ExitCode.startupFailed);
  }
  // Whatever ended the command may quote a server (an error the requestor library did not wrap): one clean line.
  const message = remoteLine(error instanceof Error ? error.message : String(error));
  process.stderr.write(`mcp-tasks: ${message}\n`);
  if (jsonRequested(process.argv)) writeJson({ status: 'error', exitCode: ExitCode.connectionOrProtocol, error: { message } });
  process.exit(ExitCode.connectionOrProtocol);
});
