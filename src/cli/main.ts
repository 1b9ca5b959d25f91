#!/usr/bin/env node
import { Command, InvalidArgumentError } from 'commander';
import { serve } from './serve.js';
import { ExitCode, UsageError } from './usage-error.js';

/** Parse a non-negative integer option (milliseconds, counts). */
export function integerOption(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0) throw new InvalidArgumentError('expected a non-negative integer');
  return parsed;
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

const program = new Command();
program.name('mcp-tasks').description('Durable MCP tasks: server, requestor CLI and tools').showHelpAfterError();
program.exitOverride((error) => {
  process.exit(error.exitCode === 0 ? 0 : ExitCode.usage);
});

program
  .command('serve')
  .description('serve MCP (2025-11-25 tasks and the 2026-07-28 Tasks Extension) on one HTTP endpoint or on stdio')
  .option('--port <port>', 'HTTP port', integerOption, 3100)
  .option('--host <host>', 'HTTP bind address', '127.0.0.1')
  .option('--data-dir <dir>', 'data directory (store, secret); MCP_TASKS_STORE overrides the database path', './data')
  .option('--stdio', 'serve on stdin/stdout instead of HTTP')
  .option('--tools <module>', 'load tools from a module (repeatable)', collect, [])
  .option('--no-builtins', 'do not register the built-in tools (analyze_logs, audit_repository)')
  .option('--fixtures <name>', 'also register fixture tools ("conformance")')
  .option('--root <dir>', 'directory tools may read (repeatable; default: current directory and /var/log)', collect, [])
  .option('--auth <spec>', 'authentication: tokens:<file> (JSON {"tokens":[{"token","issuer","subject","tenant"}]})')
  .option('--allow-remote-unauthenticated', 'allow a non-loopback bind without --auth')
  .option('--allowed-hosts <hosts>', 'Host/Origin allow-list for a non-loopback bind (comma separated)', (value) => value.split(','))
  .option('--concurrency <n>', 'tools running at once', integerOption)
  .option('--lease-ms <ms>', 'lease length of running tasks', integerOption)
  .option('--default-ttl-ms <ms>', 'default task retention', integerOption)
  .option('--max-ttl-ms <ms>', 'maximum task retention', integerOption)
  .option('--runtime-limit-ms <ms>', 'longest single run of a tool', integerOption)
  .option('--poll-interval-ms <ms>', 'poll interval hint', integerOption)
  .option('--max-attempts <n>', 'runs per task before attempts_exhausted', integerOption)
  .option('--log-level <level>', 'pino log level (logs go to stderr)', 'info')
  .action(serve);

program.parseAsync(process.argv).catch((error: unknown) => {
  if (error instanceof UsageError) {
    process.stderr.write(`mcp-tasks: ${error.message}\n`);
    process.exit(ExitCode.usage);
  }
  process.stderr.write(`mcp-tasks: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(ExitCode.connectionOrProtocol);
});
