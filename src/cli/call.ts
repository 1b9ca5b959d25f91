import { isAbsolute, resolve } from 'node:path';

import { type CallToolOptions, type CallToolOutcome, type TaskPolicy, type TasksClient, TasksClientError } from '../client/index.js';
import { toModelLine } from '../protocol/model-text.js';
import { jsonDocument, writeJson } from './json-output.js';
import { ScriptedAnswers } from './prompt-answers.js';
import { terminalPrompt } from './prompt-form.js';
import { CliInput } from './prompt-resolver.js';
import {
  answerHint,
  checkOutputWritable,
  detachOnInterrupt,
  followTask,
  openClient,
  printResult,
  reportFailure,
  type RequestorFlags,
  resolveTarget,
  resumeHint,
} from './requestor.js';
import { ExitCode, UsageError } from './usage-error.js';

/** Options of `mcp-tasks call`, as commander parses them. */
export interface CallFlags extends RequestorFlags {
  /** Tool arguments as a JSON object. */
  args: string;
  detach?: boolean;
  /** `--timeout` in ms (already converted from seconds). */
  timeout?: number;
  ttlMs?: number;
  /** `--answers`: JSON answers for the questions the call may ask (see {@link ScriptedAnswers}). */
  answers?: string;
  /** `--detach-on-input`: exit (code 6) at a question nobody answers here instead of waiting for `mcp-tasks answer`. */
  detachOnInput?: boolean;
  /** `--task`: the task policy. */
  task?: TaskPolicy;
  /** `--fallback` (only with `--task`). */
  fallback?: 'sync' | 'reject' | 'handoff';
  /** `--max-sync-ms`: bound of the sync fallback. */
  maxSyncMs?: number;
}

/** `--fallback sync` without `--max-sync-ms` or `--timeout` is bounded by this (ms). */
const DEFAULT_MAX_SYNC_MS = 300_000;

/** No `--timeout`: wait for the `tools/call` answer as long as a timer can (≈ 24.8 days, the setTimeout maximum). */
const UNBOUNDED_MS = 2_147_483_647;

/** Parse `--args`: a JSON object, sent as typed (see {@link withAbsoluteLocalPaths} for the one rewrite). */
export function parseToolArguments(json: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (error) {
    throw new UsageError(`--args is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new UsageError('--args must be a JSON object, e.g. \'{"seconds": 2}\'');
  return { ...(parsed as Record<string, unknown>) };
}

/**
 * The arguments with each relative path the tool declares as local (`"x-mcp-tasks-local-path": true` on the
 * property of its `inputSchema`; `localPathArguments` lists them) made absolute against `cwd`: the server resolves
 * paths on its side, where the requestor's directory means nothing. No other argument is touched, whatever its name
 * (`publish_report`'s `path` is relative to the repository on purpose).
 */
export function withAbsoluteLocalPaths(args: Record<string, unknown>, localPaths: readonly string[], cwd = process.cwd()): Record<string, unknown> {
  const rewritten = { ...args };
  for (const key of localPaths) {
    const value = rewritten[key];
    if (typeof value === 'string' && value.length > 0 && !isAbsolute(value)) rewritten[key] = resolve(cwd, value);
  }
  return rewritten;
}

/** Whether any top-level argument is a relative path-like string, so the tool's schema is worth asking for. */
function hasRelativeString(args: Record<string, unknown>): boolean {
  return Object.values(args).some((value) => typeof value === 'string' && value.length > 0 && !isAbsolute(value));
}

/**
 * `mcp-tasks call <tool>`: call a tool; when the server makes it a task, print its id at once (stderr), follow it
 * with a live status line (stderr) and print the result (stdout). `--detach` stops after creation.
 * Questions the server asks (before the task, or while it runs) are answered from `--answers`, else with a form on
 * the terminal, else left for `mcp-tasks answer` (the command keeps waiting, or exits 6 with `--detach-on-input`).
 * Sets `process.exitCode` (0 completed, 1 tool error, 2 failed, 3 cancelled, 4 unknown, 5 connection/protocol,
 * 6 input needed, 124 timed out, 130 interrupted).
 * @throws UsageError for malformed `--args` or `--answers` (exit 64).
 */
export async function callCommand(tool: string, flags: CallFlags): Promise<void> {
  const args = parseToolArguments(flags.args);
  await checkOutputWritable(flags.output);
  if (flags.fallback !== undefined && flags.task === undefined) throw new UsageError('--fallback needs --task required|preferred|forbidden');
  if (flags.maxSyncMs !== undefined && flags.fallback !== 'sync') throw new UsageError('--max-sync-ms bounds --fallback sync only');
  const answers = flags.answers === undefined ? undefined : ScriptedAnswers.parse(flags.answers);
  const deadline = flags.timeout === undefined ? undefined : Date.now() + flags.timeout;
  const target = await resolveTarget(flags);
  const interrupt = detachOnInterrupt();
  const prompt = terminalPrompt();
  let client: TasksClient | undefined;
  const input = new CliInput({
    ...(answers ? { answers } : {}),
    ...(prompt ? { prompt } : {}),
    detachOnInput: flags.detachOnInput === true,
    answerCommand: (taskId) => answerHint(client as TasksClient, taskId),
    stderr: process.stderr,
  });
  try {
    // Always able to answer (now, or later with `mcp-tasks answer`): declare elicitation, so the task may ask.
    client = await openClient(target, flags, target.protocol, input.handler);
    process.exitCode = await run(client, tool, args, flags, deadline, interrupt.signal, input);
  } catch (error) {
    if (interrupt.signal.aborted) process.stderr.write('mcp-tasks: interrupted\n');
    process.exitCode = interrupt.signal.aborted ? ExitCode.interrupted : reportFailure(error, flags);
  } finally {
    interrupt.dispose();
    prompt?.close();
    await client?.close();
  }
}

/** The `callTool` options of the command line: the create timeout from `--timeout`, the policy flags. */
function policyOptions(flags: CallFlags, deadline: number | undefined): CallToolOptions {
  const timeoutMs = deadline === undefined ? UNBOUNDED_MS : Math.max(1, deadline - Date.now());
  return {
    ...(flags.ttlMs === undefined ? {} : { ttlMs: flags.ttlMs }),
    timeoutMs,
    ...(flags.task === undefined ? {} : { task: flags.task, needs: {}, fallback: flags.fallback ?? 'reject' }),
    ...(flags.fallback === 'sync' ? { maxSyncMs: flags.maxSyncMs ?? (deadline === undefined ? DEFAULT_MAX_SYNC_MS : timeoutMs) } : {}),
  };
}

async function run(
  client: TasksClient,
  tool: string,
  args: Record<string, unknown>,
  flags: CallFlags,
  deadline: number | undefined,
  signal: AbortSignal,
  input: CliInput,
): Promise<number> {
  let outcome: CallToolOutcome;
  try {
    // One tools/list (the manifest's) only when a relative string could be a local path the tool declares.
    if (hasRelativeString(args)) args = withAbsoluteLocalPaths(args, await client.localPathArguments(tool));
    outcome = await client.callTool(tool, args, { ...policyOptions(flags, deadline), signal });
  } catch (error) {
    if (signal.aborted && !(error instanceof TasksClientError)) {
      process.stderr.write('mcp-tasks: interrupted before the call was sent\n');
      return ExitCode.interrupted;
    }
    // Interrupted or cut off mid-call: the message says the call may have started and was not resent.
    const code = reportFailure(error, flags);
    return signal.aborted ? ExitCode.interrupted : code;
  }
  if (outcome.kind === 'result') {
    return printResult(outcome.result, flags, client, undefined, signal);
  }
  if (outcome.kind === 'handoff') {
    writeJson(outcome.handoff);
    process.stderr.write(
      `mcp-tasks: handed off, nothing was sent (--task ${outcome.handoff.policy} --fallback handoff): ${outcome.handoff.missing.join('; ')}\n`,
    );
    return ExitCode.refusedByPolicy;
  }
  if (outcome.kind !== 'task') throw new Error(`unexpected outcome ${outcome.kind}`); // job APIs exist only in the library
  const { taskId } = outcome;
  process.stderr.write(`mcp-tasks: task ${taskId} created (tasks ${outcome.generation}, MCP ${client.protocolVersion}, ${client.url})\n`);
  if (outcome.immediateResponse) process.stderr.write(`mcp-tasks: server says: ${toModelLine(outcome.immediateResponse)}\n`);
  // The task's own status when it says something else (e.g. "waiting for a worker …": no worker process runs).
  const status = outcome.task.statusMessage;
  if (status && status !== outcome.immediateResponse) process.stderr.write(`mcp-tasks: task status: ${toModelLine(status)}\n`);
  if (flags.ttlMs !== undefined && outcome.generation === 'v2')
    process.stderr.write(
      `mcp-tasks: note: --ttl-ms has no effect on 2026-07-28; the server chose ${outcome.task.ttlMs === null ? 'unlimited retention' : `${outcome.task.ttlMs} ms`}\n`,
    );
  if (!outcome.journaled && client.journal) process.stderr.write(`mcp-tasks: warning: could not record the task in ${client.journal.path}\n`);
  if (flags.detach) {
    process.stdout.write(
      flags.json ? jsonDocument({ taskId, generation: outcome.generation, protocolVersion: client.protocolVersion, task: outcome.task }) : `${taskId}\n`,
    );
    process.stderr.write(`mcp-tasks: detached; follow it with: ${await resumeHint(client, taskId)}\n`);
    return ExitCode.completed;
  }
  return followTask(client, taskId, flags, { ...(deadline === undefined ? {} : { deadline }), signal, input });
}
