/**
 * Issue 28: an upstream's elicitation requests become our questions, in both generations, with the real
 * `@modelcontextprotocol/server-everything` 2026.8.31 over stdio (its `trigger-elicitation-request` tool asks a form
 * during its `tools/call`). In a task the task goes `input_required` while the forwarded call stays open, and the
 * answer goes back to the upstream, which finishes the same call: the tap in front of it must show one `tools/call`,
 * never a second. Without a task, a 2025-11-25 session is asked directly; a 2026-07-28 call cannot wait and is refused.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { cliRunner, ensureBuilt } from '../cli/support.js';
import { connectV1Http, type V1HttpClient } from '../helpers/official-clients.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { everythingStdio, tapEntries } from '../helpers/upstream-servers.js';
import { pollModernTask, postModern, TASKS_EXTENSION } from '../helpers/wire.js';

const ASKS = 'everything_trigger-elicitation-request';
const ELICITING = { elicitation: { form: {} }, extensions: { [TASKS_EXTENSION]: {} } };

/** The texts of a `CallToolResult`'s content, joined. */
const texts = (result: unknown): string => ((result as { content?: Array<{ text?: string }> }).content ?? []).map((block) => block.text ?? '').join('\n');

describe("an upstream's elicitation through serve --upstream (issue 28)", () => {
  const temp = makeTempDir('mcp-tasks-upstream-ask-');
  const tap = join(temp.dir, 'everything.tap');
  const limitedTap = join(temp.dir, 'limited.tap');
  let server: ServerProcess;
  let v1: V1HttpClient;
  const asked: Array<Record<string, unknown>> = [];
  let answerName = 'Grace';

  /** The `tools/call` requests of the asking tool the gateway sent upstream, and the answers it sent to its questions. */
  const upstreamTraffic = () => {
    const entries = tapEntries(tap).filter((entry) => entry.dir === 'in');
    return {
      calls: entries.filter((entry) => entry.message?.method === 'tools/call' && entry.message.params?.name === 'trigger-elicitation-request').length,
      answers: entries.filter(
        (entry) => entry.message?.method === undefined && (entry.message as { result?: { action?: string } })?.result?.action !== undefined,
      ).length,
    };
  };

  beforeAll(async () => {
    ensureBuilt();
    // A per-tool runtime limit and retention for one upstream tool (issue 28's policy), checked in the last case.
    const config = join(temp.dir, 'mcp-tasks.json');
    writeFileSync(config, JSON.stringify({ upstreamTools: { 'limited_trigger-long-running-operation': { runtimeLimitMs: 1_000, defaultTtlMs: 600_000 } } }));
    server = await startServerProcess(join(temp.dir, 'data'), [
      '--config',
      config,
      '--no-builtins',
      '--upstream',
      everythingStdio('everything', tap),
      '--upstream',
      everythingStdio('limited', limitedTap),
      '--status-flush-interval-ms',
      '50',
      '--poll-interval-ms',
      '100',
      '--log-level',
      'debug',
    ]);
    v1 = await connectV1Http(server.url, { declareTasks: true, capabilities: { elicitation: { form: {} } } });
    v1.client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params as Record<string, unknown>);
      return { action: 'accept', content: { name: answerName } };
    });
  }, 120_000);
  afterAll(async () => {
    await v1?.close();
    await server?.stop();
    temp.remove();
  });

  it('E25/E21 v2: the upstream question makes the task input_required with its form; tasks/update answers it and the same upstream call completes', async () => {
    const before = upstreamTraffic();
    const created = await postModern(server.url, 'tools/call', { name: ASKS, arguments: {} }, { capabilities: ELICITING });
    const taskId = created.body.result?.taskId;
    if (created.body.result?.resultType !== 'task' || typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(created.body)}`);
    const waiting = await pollModernTask(server.url, taskId, { until: (status) => status !== 'working' });
    expect(waiting.status).toBe('input_required');
    const question = (waiting.inputRequests as Record<string, { method: string; params: { message: string; requestedSchema: { required?: string[] } } }>)[
      'input-1'
    ];
    expect(question?.method).toBe('elicitation/create');
    // Attributed to the upstream, its schema passed on as it asked.
    expect(question?.params.message).toBe('everything: Please provide inputs for the following fields:');
    expect(question?.params.requestedSchema.required).toEqual(['name']);
    const update = await postModern(server.url, 'tasks/update', { taskId, inputResponses: { 'input-1': { action: 'accept', content: { name: 'Ada' } } } });
    expect(update.body.error).toBeUndefined();
    const done = await pollModernTask(server.url, taskId);
    expect(done.status).toBe('completed');
    expect(texts(done.result)).toContain('User provided the requested information');
    expect(texts(done.result)).toContain('"name": "Ada"');
    // One forwarded call, answered once: the run waited with the call open instead of running it again.
    const after = upstreamTraffic();
    expect(after.calls - before.calls).toBe(1);
    expect(after.answers - before.answers).toBe(1);
  }, 30_000);

  it('R41/E30 cancelling the task while it waits: the upstream call is cancelled and its question answered as cancelled, not with an error', async () => {
    const created = await postModern(server.url, 'tools/call', { name: ASKS, arguments: {} }, { capabilities: ELICITING });
    const taskId = created.body.result?.taskId as string;
    expect((await pollModernTask(server.url, taskId, { until: (status) => status !== 'working' })).status).toBe('input_required');
    const asked = tapEntries(tap)
      .filter((entry) => entry.dir === 'out' && entry.message?.method === 'elicitation/create')
      .at(-1);
    expect(asked?.message?.id).toBeDefined();
    await postModern(server.url, 'tasks/cancel', { taskId });
    expect((await pollModernTask(server.url, taskId)).status).toBe('cancelled');
    const replies = () =>
      tapEntries(tap).filter((entry) => entry.dir === 'in' && entry.message?.id === asked?.message?.id && entry.message?.method === undefined);
    await expect.poll(() => replies().length, { timeout: 5000 }).toBe(1);
    expect(replies()[0]?.message).toMatchObject({ result: { action: 'cancel' } });
    await expect
      .poll(() => tapEntries(tap).some((entry) => entry.dir === 'in' && entry.message?.method === 'notifications/cancelled'), { timeout: 5000 })
      .toBe(true);
  }, 30_000);

  it("R27–R31 v1 (SDK 1.32.2): the question reaches the client's elicitation handler through tasks/result and the task completes with the upstream's result", async () => {
    asked.length = 0;
    answerName = 'Grace';
    const events: Array<{ type: string; [key: string]: any }> = [];
    for await (const event of v1.client.experimental.tasks.callToolStream({ name: ASKS, arguments: {} }, CallToolResultSchema, { task: { ttl: 60_000 } }))
      events.push(event as never);
    expect(events[0]?.type).toBe('taskCreated');
    expect(events.some((event) => event.type === 'taskStatus' && event.task.status === 'input_required')).toBe(true);
    expect(asked).toHaveLength(1);
    expect(asked[0]?.message).toBe('everything: Please provide inputs for the following fields:');
    const last = events.at(-1);
    expect(last?.type).toBe('result');
    expect(texts(last?.result)).toContain('"name": "Grace"');
  }, 30_000);

  it('without a task, a 2025-11-25 session is asked directly on the call and gets the result of the same call', async () => {
    asked.length = 0;
    answerName = 'Linus';
    const before = upstreamTraffic();
    const result = await v1.client.callTool({ name: ASKS, arguments: {} });
    expect(asked).toHaveLength(1);
    expect(texts(result)).toContain('"name": "Linus"');
    expect(upstreamTraffic().calls - before.calls).toBe(1);
  }, 30_000);

  it("the upstream's log messages (notifications/message) reach our log under its name", async () => {
    const before = server
      .log()
      .split('\n')
      .filter((line) => line.includes('"msg":"upstream log"')).length;
    const toggled = await v1.client.callTool({ name: 'everything_toggle-simulated-logging', arguments: {} });
    expect(texts(toggled)).toContain('Started simulated');
    // server-everything sends its first message at once, then one every 5 s, each at a random MCP level.
    await expect
      .poll(
        () =>
          server
            .log()
            .split('\n')
            .filter((line) => line.includes('"msg":"upstream log"')).length,
        { timeout: 10_000 },
      )
      .toBeGreaterThan(before);
    const line = server
      .log()
      .split('\n')
      .find((entry) => entry.includes('"msg":"upstream log"'));
    expect(JSON.parse(line ?? '{}')).toMatchObject({ upstream: 'everything', data: expect.stringMatching(/-level message|level-message/) });
    await v1.client.callTool({ name: 'everything_toggle-simulated-logging', arguments: {} });
  }, 30_000);

  it('upstreamTools runtimeLimitMs and defaultTtlMs: the long operation is stopped at its own limit (the call cancelled upstream) and its task kept as configured', async () => {
    const created = await postModern(
      server.url,
      'tools/call',
      { name: 'limited_trigger-long-running-operation', arguments: { duration: 20, steps: 20 } },
      { capabilities: ELICITING },
    );
    const taskId = created.body.result?.taskId as string;
    expect(created.body.result?.ttlMs).toBe(600_000);
    const done = await pollModernTask(server.url, taskId, { timeoutMs: 10_000 });
    expect(done).toMatchObject({ status: 'failed', error: { code: -32603, data: { reason: 'runtime_limit' } } });
    expect(String(done.statusMessage)).toContain('1000 ms');
    // The forwarded call itself is cancelled upstream (notifications/cancelled naming its request id).
    const sent = tapEntries(limitedTap).find((entry) => entry.dir === 'in' && entry.message?.method === 'tools/call');
    await expect
      .poll(
        () =>
          tapEntries(limitedTap).some(
            (entry) => entry.dir === 'in' && entry.message?.method === 'notifications/cancelled' && entry.message.params?.requestId === sent?.message?.id,
          ),
        { timeout: 5000 },
      )
      .toBe(true);
    // Control: the same tool of the other upstream runs under the server's limit (its task's default retention too).
    const plain = await postModern(
      server.url,
      'tools/call',
      { name: 'everything_trigger-long-running-operation', arguments: { duration: 2, steps: 2 } },
      { capabilities: ELICITING },
    );
    expect(plain.body.result?.ttlMs).not.toBe(600_000);
    expect((await pollModernTask(server.url, plain.body.result?.taskId as string)).status).toBe('completed');
  }, 30_000);

  it('the CLI: mcp-tasks call of an upstream tool follows its task, answers its question from --answers and prints the upstream result', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, MCP_TASKS_CLIENT_STATE: join(temp.dir, 'cli-state', 'tasks.json') };
    delete env.MCP_TASKS_URL;
    delete env.MCP_TASKS_TOKEN;
    const { cli } = cliRunner(env);
    const before = upstreamTraffic();
    const run = await cli(['call', ASKS, '--url', server.url, '--answers', '{"name": "Lovelace"}']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('"name": "Lovelace"');
    expect(run.stderr).toMatch(/task \S+/);
    expect(upstreamTraffic().calls - before.calls).toBe(1);
  }, 30_000);

  it('-32021: a 2026-07-28 call without the Tasks Extension cannot wait for the answer, and is told to call as a task', async () => {
    const refused = await postModern(server.url, 'tools/call', { name: ASKS, arguments: {} }, { capabilities: { elicitation: { form: {} } } });
    expect(refused.body.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } } });
    expect(refused.body.error?.message).toContain(`tool ${ASKS} asks for input while it runs`);
  }, 30_000);

  it('a question asked while two calls are in flight on the connection is refused to the upstream, not guessed; the control with one call is the first case', async () => {
    const long = await postModern(
      server.url,
      'tools/call',
      { name: 'everything_trigger-long-running-operation', arguments: { duration: 4, steps: 4 } },
      { capabilities: ELICITING },
    );
    const longId = long.body.result?.taskId as string;
    await pollModernTask(server.url, longId, { until: (status) => status === 'working', timeoutMs: 5000 });
    // Wait until the long call is really out upstream before the asking call goes.
    await expect
      .poll(() => tapEntries(tap).filter((entry) => entry.dir === 'in' && entry.message?.params?.name === 'trigger-long-running-operation').length)
      .toBeGreaterThan(0);
    const created = await postModern(server.url, 'tools/call', { name: ASKS, arguments: {} }, { capabilities: ELICITING });
    const taskId = created.body.result?.taskId as string;
    const done = await pollModernTask(server.url, taskId);
    // The upstream's tool saw its question fail and answered isError with our reason; no question reached a client.
    expect(done.status).toBe('completed');
    expect((done.result as { isError?: boolean }).isError).toBe(true);
    expect(texts(done.result)).toContain('cannot be forwarded');
    await server.logLine('upstream asked for input that cannot be placed with one call; refused');
    expect((await pollModernTask(server.url, longId)).status).toBe('completed');
  }, 30_000);
});
