/**
 * Issue 27, the proof: the real Claude Code CLI (`@anthropic-ai/claude-code@2.1.328`, installed from npm at test time
 * into ~/.cache/mcp-tasks-test/claude-code, never a devDependency: 356 MB) against our `serve`, with a scripted
 * stand-in for the Anthropic Messages API, all inside `unshare -n` (a network namespace with only loopback: nothing
 * else is reachable). The assertions are on what the stand-in received — what the model would have seen — and on the
 * MCP exchange a recording proxy saw:
 * - interactive CLI (through a pseudo-terminal; it declares the Tasks Extension): the tool's immediate response
 *   reaches the model (§1), the task's result arrives later as the compact summary (§2), followed by polling; a call
 *   that finishes within the inline grace is answered in the same turn without a task (§5);
 * - `-p` (no extension): the compact result inline (§2); a silent 8 s inline call gets keep-alive
 *   `notifications/progress` on its streamed answer and completes (§3); a task-required tool is usable through
 *   `--task-fallback-tools` (§4);
 * - issue 28: a tool of a server that knows nothing of tasks (`@modelcontextprotocol/server-everything` from npm over
 *   stdio, behind `serve --upstream`) becomes a durable task Claude Code follows to the upstream's result.
 * Runs in `npm run test:long` only. It fails — never skips — when Claude Code cannot be installed or run, or when this
 * process cannot create a network namespace (run as root).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { beforeAll, describe, expect, it } from 'vitest';

import { everythingStdio } from '../helpers/upstream-servers.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const VERSION = '2.1.328';
const CACHE = join(homedir(), '.cache/mcp-tasks-test/claude-code');
const CLAUDE = join(CACHE, 'node_modules/@anthropic-ai/claude-code-linux-x64/claude');
const LOGHUB = resolve(ROOT, '../shared/data/loghub');
const LOGS = existsSync(LOGHUB) ? LOGHUB : '/work/shared/data/loghub';

interface Run {
  exit: unknown;
  output: string;
  messages: Array<{ tools: string[]; messages: Array<{ role: string; content: unknown }> }>;
  exchanges: Array<{ requestBody: string; status: number; contentType: string; responseBody: string }>;
}

/** Run Claude Code once in its own network namespace (see claude-code-runner.mjs). */
function run(config: Record<string, unknown>): Run {
  const result = spawnSync('unshare', ['-n', process.execPath, join(ROOT, 'test/long/claude-code-runner.mjs'), JSON.stringify({ claude: CLAUDE, ...config })], {
    encoding: 'utf8',
    timeout: 240_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  const line = result.stdout.trim().split('\n').pop() ?? '';
  if (result.status !== 0 || !line.startsWith('{'))
    throw new Error(`the Claude Code run failed (${result.status ?? result.signal}): ${result.stderr.slice(-2000)}`);
  return JSON.parse(line) as Run;
}

/** Every tool_result the model received, as text. */
function toolResults(run: Run): string[] {
  return run.messages.flatMap((request) =>
    request.messages.flatMap((message) =>
      Array.isArray(message.content)
        ? (message.content as Array<{ type: string; content?: unknown }>)
            .filter((block) => block.type === 'tool_result')
            .map((block) => (typeof block.content === 'string' ? block.content : JSON.stringify(block.content)))
        : [],
    ),
  );
}

/** Every text the model received in user turns (notifications included). */
function userTexts(run: Run): string[] {
  return run.messages.flatMap((request) =>
    request.messages
      .filter((message) => message.role === 'user')
      .flatMap((message) =>
        typeof message.content === 'string' ? [message.content] : (message.content as Array<{ type: string; text?: string }>).map((block) => block.text ?? ''),
      ),
  );
}

const mcpCalls = (run: Run, method: string) => run.exchanges.filter((exchange) => exchange.requestBody.includes(`"method":"${method}"`));

describe('Claude Code 2.1.328 against mcp-tasks (issue 27 proof, loopback only)', () => {
  beforeAll(() => {
    if (process.getuid?.() !== 0) throw new Error('test/long/claude-code.test.ts runs Claude Code in `unshare -n` and needs root');
    execFileSync('unshare', ['-n', 'true']);
    if (!existsSync(join(ROOT, 'dist/cli/main.js'))) throw new Error('dist/ is missing: run `npm run build` (npm run test:long does)');
    if (!existsSync(CLAUDE)) {
      mkdirSync(CACHE, { recursive: true });
      // The platform binary is used directly, so the package's postinstall (which copies it) is not needed.
      execFileSync('npm', ['install', '--prefix', CACHE, '--ignore-scripts', '--no-audit', '--no-fund', `@anthropic-ai/claude-code@${VERSION}`], {
        stdio: 'inherit',
      });
    }
    const version = execFileSync(CLAUDE, ['--version'], { encoding: 'utf8' });
    if (!version.startsWith(VERSION)) throw new Error(`expected Claude Code ${VERSION}, found ${version}`);
  }, 600_000);

  it('interactive CLI: the immediate response reaches the model; the task is polled and its compact result arrives later', () => {
    const result = run({
      mode: 'interactive',
      prompt: 'What went wrong in the logs?',
      script: { tool: 'mcp__tasks__analyze_logs', input: { path: LOGS } },
      serveArgs: ['--root', LOGS],
      inlineGraceMs: 0,
      until: 'templateCount',
      timeoutMs: 150_000,
    });
    const created = toolResults(result).find((text) => text.includes('server-side task'));
    expect(created, result.output).toBeDefined();
    // §1: the tool's own text, not only the generic placeholder.
    expect(created).toContain(`Started scanning ${LOGS} for severities and the most frequent message templates`);
    expect(mcpCalls(result, 'tasks/get').length).toBeGreaterThanOrEqual(1);
    // §2: the result the model gets later is the summary, well under Claude Code's cut (~100k characters).
    const delivered = userTexts(result).find((text) => text.includes('templateCount'));
    expect(delivered, result.output).toBeDefined();
    expect(delivered).toContain('"detail":"summary"');
    expect(delivered!.length).toBeLessThan(30_000);
  }, 300_000);

  it('issue 28: interactive CLI, a tool of server-everything behind serve --upstream is a durable task; the upstream result arrives later', () => {
    const result = run({
      mode: 'interactive',
      prompt: 'Run the long operation.',
      script: { tool: 'mcp__tasks__everything_trigger-long-running-operation', input: { duration: 4, steps: 4 } },
      serveArgs: ['--no-builtins', '--upstream', everythingStdio('everything')],
      inlineGraceMs: 0,
      until: 'Long running operation completed',
      timeoutMs: 150_000,
    });
    // The upstream tool, under the gateway's name, was called as a task.
    expect(
      toolResults(result).some((text) => text.includes('server-side task')),
      result.output,
    ).toBe(true);
    const [call] = mcpCalls(result, 'tools/call');
    expect(call?.requestBody).toContain('"name":"everything_trigger-long-running-operation"');
    // Claude Code declares the Tasks Extension (2026-07-28): the gateway answers with a task, not the upstream's result.
    expect(call?.requestBody).toContain('"io.modelcontextprotocol/tasks"');
    expect(call?.responseBody).toContain('"resultType":"task"');
    expect(mcpCalls(result, 'tasks/get').length).toBeGreaterThanOrEqual(1);
    // The upstream's own answer reaches the model after the task settles.
    const delivered = userTexts(result).find((text) => text.includes('Long running operation completed'));
    expect(delivered, result.output).toContain('Duration: 4 seconds, Steps: 4.');
  }, 300_000);

  it('interactive CLI with the inline grace: a call that finishes within it is answered in the same turn, no background task, no poll (§5)', () => {
    const result = run({
      mode: 'interactive',
      prompt: 'What went wrong in the Apache log?',
      script: { tool: 'mcp__tasks__analyze_logs', input: { path: join(LOGS, 'Apache/Apache_2k.log') } },
      serveArgs: ['--root', LOGS],
      // Generous, so that a loaded machine cannot turn the short scan into a task; the first test is the grace-0 control.
      inlineGraceMs: 10_000,
      until: 'templateCount',
      timeoutMs: 150_000,
    });
    const answer = toolResults(result).find((text) => text.includes('templateCount'));
    expect(answer, result.output).toBeDefined();
    expect(JSON.parse(answer!)).toMatchObject({ detail: 'summary', files: 1 });
    expect(toolResults(result).some((text) => text.includes('server-side task'))).toBe(false);
    expect(mcpCalls(result, 'tasks/get')).toEqual([]);
  }, 300_000);

  it('-p: the inline result is the compact structuredContent (under 20,000 characters, the summary)', () => {
    const result = run({
      mode: 'print',
      prompt: 'What went wrong in the logs?',
      script: { tool: 'mcp__tasks__analyze_logs', input: { path: LOGS } },
      serveArgs: ['--root', LOGS],
    });
    const answer = toolResults(result).find((text) => text.includes('templateCount'));
    expect(answer, result.output).toBeDefined();
    expect(answer!.length).toBeLessThan(20_000);
    const structured = JSON.parse(answer!) as { detail: string; files: number };
    expect(structured).toMatchObject({ detail: 'summary', files: 16 });
  }, 300_000);

  it('-p: a silent 8 s inline call carries a progressToken, gets keep-alive progress on its streamed answer and is not aborted', () => {
    const result = run({
      mode: 'print',
      prompt: 'Compute it.',
      script: { tool: 'mcp__tasks__slow_compute', input: { seconds: 8 } },
      serveArgs: ['--fixtures', 'conformance', '--progress-keep-alive-ms', '1000'],
    });
    expect(
      toolResults(result).some((text) => text.includes('Computed result after 8s')),
      result.output,
    ).toBe(true);
    const [call] = mcpCalls(result, 'tools/call');
    expect(call?.requestBody).toContain('"progressToken"');
    expect(call?.contentType).toContain('text/event-stream');
    expect((call?.responseBody ?? '').split('notifications/progress').length - 1).toBeGreaterThanOrEqual(3);
  }, 300_000);

  it('-p with --task-fallback-tools: a task-required tool is offered and answers with a task id to follow through get_task_status', () => {
    const result = run({
      mode: 'print',
      prompt: 'Run the job.',
      script: { tool: 'mcp__tasks__failing_job', input: {} },
      serveArgs: ['--fixtures', 'conformance', '--task-fallback-tools'],
    });
    const answer = toolResults(result).find((text) => text.includes('Started as task'));
    expect(answer, result.output).toBeDefined();
    expect(answer).toContain('get_task_status');
  }, 300_000);
});
