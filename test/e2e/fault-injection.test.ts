/**
 * Fault-injection proof (issue 13 item 5), over real HTTP through the shipped loopback fault proxy: for each cut
 * point and both generations the client never repeats `tools/call` (counted at the proxy, i.e. what reached the
 * server), keeps following the known task id after the proxy heals, and the side effect happens once (counted by
 * the tool inside the server).
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { type ConnectionEvent, connectTasksClient, TaskJournal, type TasksClient, ToolCallOutcomeUnknownError } from '../../src/client/index.js';
import { effectTools, FaultProxy, startIdempotentFront } from '../helpers/fault-proxy.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const GENERATIONS = [
  { protocol: '2025-11-25', generation: 'v1' },
  { protocol: '2026-07-28', generation: 'v2' },
] as const;
const DOWN_MS = 1200;
const WAIT = { timeoutMs: 20_000, budgets: { reconcileMs: 15_000 } };

describe.each(GENERATIONS)('fault injection over MCP $protocol (tasks $generation)', ({ protocol, generation }) => {
  const fixture = effectTools();
  const temp = makeTempDir('mcp-tasks-faults-');
  const journalPath = join(temp.dir, 'tasks.json');
  let running: RunningTasksServer;
  let proxy: FaultProxy;
  let clients: TasksClient[] = [];
  const fronts: Array<{ close(): Promise<void> }> = [];
  let label = 0;
  const nextLabel = (): string => `${generation}-${++label}`;

  const open = async (url = proxy.url, confirm = false): Promise<TasksClient> => {
    const client = await connectTasksClient({
      url,
      protocol,
      journal: journalPath,
      ...(confirm ? { onInput: () => ({ action: 'accept' as const, content: { confirm: true } }) } : {}),
    });
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    running = await startTasksServer({ tools: fixture.tools, limits: { pollIntervalMs: 100 } });
  });
  afterEach(async () => {
    await Promise.all(clients.map((client) => client.close()));
    clients = [];
    await proxy?.close();
    for (const front of fronts.splice(0)) await front.close();
  });
  afterAll(async () => {
    await running.close();
    temp.remove();
  });

  const startProxy = async (target = running.url): Promise<FaultProxy> => (proxy = await FaultProxy.start(target));

  it('cut before CreateTaskResult reaches the client, no idempotency declared: outcome unknown, never resent, the task ran once', async () => {
    // Our server declares idempotency keys (issue 12); a front hides that, as a server that does not honour them.
    const undeclared = await startIdempotentFront(running.url, { strip: true });
    fronts.push(undeclared);
    await startProxy(undeclared.url);
    const client = await open();
    expect((await client.manifest()).idempotencyKeys).toBe(false);
    const tag = nextLabel();
    const cut = proxy.arm({ method: 'tools/call', cut: 'drop-answer', downMs: 300 });
    const error = await client.callTool('effect_job', { label: tag, seconds: 0 }).catch((caught: unknown) => caught);
    await cut;
    expect(error).toBeInstanceOf(ToolCallOutcomeUnknownError);
    expect((error as Error).message).toMatch(/was not resent/);
    await sleep(DOWN_MS);
    expect(proxy.forwarded('tools/call')).toBe(1);
    expect(fixture.effects(tag)).toBe(1);
    // The evidence stays in the journal for `mcp-tasks tasks` / `resume`, which will not resend it either.
    const pending = (await new TaskJournal(journalPath).listPending()).find((call) => call.arguments.label === tag);
    expect(pending).toMatchObject({ tool: 'effect_job', idempotencyHonoured: false });
    await expect(client.resumeCall(pending!)).rejects.toBeInstanceOf(ToolCallOutcomeUnknownError);
    expect(proxy.forwarded('tools/call')).toBe(1);
    expect((await new TaskJournal(journalPath).listPending()).some((call) => call.arguments.label === tag)).toBe(false);
  });

  it('cut before CreateTaskResult reaches the client, the server honours keys: one retry with the same key, the same task, one effect', async () => {
    const front = await startIdempotentFront(running.url);
    try {
      await startProxy(front.url);
      const client = await open();
      expect((await client.manifest()).idempotencyKeys).toBe(true);
      const tag = nextLabel();
      void proxy.arm({ method: 'tools/call', cut: 'drop-answer' });
      const outcome = await client.callTool('effect_job', { label: tag, seconds: 0.2 });
      expect(outcome.kind).toBe('task');
      if (outcome.kind !== 'task') return;
      expect(proxy.forwarded('tools/call')).toBe(2);
      expect(front.keys).toEqual([outcome.idempotencyKey, outcome.idempotencyKey]);
      expect(front.replays).toBe(1);
      await expect(client.resume(outcome.taskId, WAIT)).resolves.toMatchObject({ content: [{ text: `effect ${tag} #1` }] });
      expect(fixture.effects(tag)).toBe(1);
    } finally {
      await front.close();
    }
  });

  it('cut right after CreateTaskResult: the client rides out the outage, says so, and resumes the same task', async () => {
    await startProxy();
    const client = await open();
    const tag = nextLabel();
    void proxy.arm({ method: 'tools/call', cut: 'after-answer', downMs: DOWN_MS });
    const outcome = await client.callTool('effect_job', { label: tag, seconds: 0.3 });
    if (outcome.kind !== 'task') throw new Error('expected a task');
    const events: ConnectionEvent[] = [];
    const result = await client.resume(outcome.taskId, { ...WAIT, onConnection: (event) => events.push(event) });
    expect(result).toMatchObject({ content: [{ text: `effect ${tag} #1` }] });
    expect(events[0]).toMatchObject({ state: 'unreachable', taskId: outcome.taskId });
    expect(events.at(-1)).toMatchObject({ state: 'reachable', taskId: outcome.taskId });
    expect(proxy.forwarded('tools/call')).toBe(1);
    expect(fixture.effects(tag)).toBe(1);
  });

  it('cut between completed and the result retrieval: the result is fetched after the outage, once', async () => {
    await startProxy();
    const client = await open();
    const tag = nextLabel();
    const outcome = await client.callTool('effect_job', { label: tag, seconds: 0.2 });
    if (outcome.kind !== 'task') throw new Error('expected a task');
    // v1 fetches the result with tasks/result; v2 carries it inline in the tasks/get that reports completion.
    const cut =
      generation === 'v1'
        ? proxy.arm({ method: 'tasks/result', cut: 'drop-answer', downMs: DOWN_MS })
        : proxy.arm({ method: 'tasks/get', cut: 'drop-answer', when: (result) => result.status === 'completed', downMs: DOWN_MS });
    const result = await client.resume(outcome.taskId, WAIT);
    await cut;
    expect(result).toMatchObject({ content: [{ text: `effect ${tag} #1` }] });
    expect(proxy.forwarded('tools/call')).toBe(1);
    expect(fixture.effects(tag)).toBe(1);
  });

  it('cut while the task waits in input_required: answered after the outage, one effect', async () => {
    await startProxy();
    const client = await open(proxy.url, true);
    const tag = nextLabel();
    const cut = proxy.arm({ method: 'tasks/get', cut: 'after-answer', when: (result) => result.status === 'input_required', downMs: DOWN_MS });
    const outcome = await client.callTool('confirm_effect', { label: tag });
    if (outcome.kind !== 'task') throw new Error('expected a task');
    const result = await client.resume(outcome.taskId, WAIT);
    await cut;
    expect(result).toMatchObject({ content: [{ text: `effect ${tag} #1` }] });
    expect(proxy.forwarded('tools/call')).toBe(1);
    expect(fixture.effects(tag)).toBe(1);
  });

  it('cut right after tasks/cancel is sent: the cancel is confirmed after the outage and the final outcome arrives', async () => {
    await startProxy();
    const client = await open();
    const tag = nextLabel();
    const outcome = await client.callTool('effect_job', { label: tag, seconds: 60 });
    if (outcome.kind !== 'task') throw new Error('expected a task');
    const cut = proxy.arm({ method: 'tasks/cancel', cut: 'drop-answer', downMs: DOWN_MS });
    const events: ConnectionEvent[] = [];
    const answer = await client.cancelTask(outcome.taskId, { budgets: { reconcileMs: 15_000 }, onConnection: (event) => events.push(event) });
    await cut;
    if (generation === 'v1') expect(answer?.status).toBe('cancelled');
    expect(events.map((event) => event.state)).toContain('unreachable');
    expect((await client.waitForTask(outcome.taskId, WAIT)).status).toBe('cancelled');
    expect(proxy.forwarded('tools/call')).toBe(1);
    expect(proxy.forwarded('tasks/cancel')).toBeGreaterThanOrEqual(2);
    expect(fixture.effects(tag)).toBe(1);
  });

  it('an outage longer than the reconciliation budget ends in outcome unknown with the last status, never failed', async () => {
    await startProxy();
    const client = await open();
    const tag = nextLabel();
    const outcome = await client.callTool('effect_job', { label: tag, seconds: 30 });
    if (outcome.kind !== 'task') throw new Error('expected a task');
    proxy.goDown();
    const error = await client.resume(outcome.taskId, { timeoutMs: 20_000, budgets: { reconcileMs: 800 } }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ name: 'TaskOutcomeUnknownError', reason: 'unreachable', lastStatus: 'working', taskId: outcome.taskId });
    proxy.heal();
    const direct = await open(running.url);
    expect((await direct.getTask(outcome.taskId)).status).toBe('working');
    await direct.cancelTask(outcome.taskId);
  });
});
