/**
 * Issue 3, acceptance 2: a restart between question and answer, for each task generation. Real `mcp-tasks serve`
 * processes (built `dist/`, run `npm run build` first) on one data directory, tools from
 * `test/fixtures/input-tools.mjs`: `journaled_confirm` appends `run` on every run and `prepare <file>` in a journaled
 * step BEFORE it asks, then `apply …` in a journaled step after the answer. The question is asked, the server is
 * killed with SIGKILL and restarted, and only THEN the answer is sent to the new process:
 * - v2: `tasks/update` (SEP-2663 E21/E25);
 * - v1: the client's JSON-RPC response to the `elicitation/create` it received on the first process's `tasks/result`
 *   stream, POSTed as a real client would after the restart (same request id, its now stale `Mcp-Session-Id`).
 * The task must complete with that answer and the journaled side effect must have run exactly once.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';

import { connectV1Http, pollUntil, RELATED_TASK } from '../helpers/official-clients.js';
import { startServerProcess } from '../helpers/server-process.js';
import { RawLegacySession } from '../helpers/sse.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { pollModernTask, postModern, TASKS_EXTENSION } from '../helpers/wire.js';

const TOOLS = resolve(import.meta.dirname, '../fixtures/input-tools.mjs');
const ARGS = ['--no-builtins', '--tools', TOOLS, '--lease-ms', '600', '--poll-interval-ms', '50'];
const CONFIRM_SCHEMA = { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] };
const ELICITING = { elicitation: { form: {} }, extensions: { [TASKS_EXTENSION]: {} } };
const YES = { action: 'accept', content: { confirm: true } };

const lines = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8').trim().split('\n') : []);
const text = (result: unknown) => ((result as { content?: Array<{ text?: string }> }).content ?? [])[0]?.text;

describe('restart between question and answer (real processes, kill -9, same data dir)', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('issue 3 acceptance 2 (v2, E21/E25): question asked, kill -9, restart, tasks/update to the new process → completed with that answer; the journaled step before the question ran once', async () => {
    const temp = makeTempDir();
    cleanups.push(() => temp.remove());
    const dataDir = join(temp.dir, 'data');
    const log = join(temp.dir, 'v2.log');

    const first = await startServerProcess(dataDir, ARGS);
    cleanups.push(() => first.stop());
    const created = await postModern(
      first.url,
      'tools/call',
      { name: 'journaled_confirm', arguments: { log, filename: 'v2.txt' } },
      { capabilities: ELICITING },
    );
    const taskId = created.body.result?.taskId;
    if (created.body.result?.resultType !== 'task' || typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(created.body)}`);
    const asked = await pollModernTask(first.url, taskId, { until: (status) => status !== 'working' });
    expect(asked.status).toBe('input_required');
    expect(asked.inputRequests).toEqual({
      'input-1': { method: 'elicitation/create', params: { mode: 'form', message: 'Delete v2.txt?', requestedSchema: CONFIRM_SCHEMA } },
    });
    expect(lines(log)).toEqual(['run', 'prepare v2.txt']);

    await first.kill9();
    const second = await startServerProcess(dataDir, ARGS);
    cleanups.push(() => second.stop());

    // Still parked after the restart, with the same question under the same key.
    const parked = await postModern(second.url, 'tasks/get', { taskId });
    expect(parked.body.result).toMatchObject({ status: 'input_required', inputRequests: asked.inputRequests });

    const ack = await postModern(second.url, 'tasks/update', { taskId, inputResponses: { 'input-1': YES } });
    expect(ack.status).toBe(200);
    expect(ack.body.result?.resultType).toBe('complete');
    const done = await pollModernTask(second.url, taskId);
    expect(done.status).toBe('completed');
    expect(text(done.result)).toBe('Deleted v2.txt');
    // Two runs (question, then answer); `prepare` replayed from the journal, not repeated.
    expect(lines(log)).toEqual(['run', 'prepare v2.txt', 'run', 'apply delete v2.txt']);
  });

  it("issue 3 acceptance 2 (v1, R29/R31): elicitation/create received on tasks/result, kill -9, restart, the client's reply POSTed to the new process with its session id (kept in the store) → completed with that answer; the journaled step ran once", async () => {
    const temp = makeTempDir();
    cleanups.push(() => temp.remove());
    const dataDir = join(temp.dir, 'data');
    const log = join(temp.dir, 'v1.log');

    const first = await startServerProcess(dataDir, ARGS);
    cleanups.push(() => first.stop());
    const session = await RawLegacySession.open(first.url, { capabilities: { elicitation: { form: {} } } });
    const created = await session.request('tools/call', { name: 'journaled_confirm', arguments: { log, filename: 'v1.txt' }, task: {} });
    const taskId = (created.body.result?.task as { taskId?: string } | undefined)?.taskId;
    if (typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(created.body)}`);
    await pollUntil(
      async () => (await session.request('tasks/get', { taskId })).body.result?.status,
      (status) => status === 'input_required',
      { what: 'input_required' },
    );

    // R29: the client opens tasks/result; the question arrives on that stream.
    const stream = await session.stream('tasks/result', { taskId });
    cleanups.push(() => stream.close());
    expect(stream.status).toBe(200);
    if (!stream.sse) throw new Error(`tasks/result did not stream: ${JSON.stringify(stream.json?.body)}`);
    const elicitation = await stream.sse.waitFor((message) => message.method === 'elicitation/create', {
      what: 'elicitation/create on the tasks/result stream',
    });
    expect(elicitation.id).toBe(`mcp-tasks-input/${taskId}/input-1`);
    expect(elicitation.params).toEqual({ mode: 'form', message: 'Delete v1.txt?', requestedSchema: CONFIRM_SCHEMA, _meta: { [RELATED_TASK]: { taskId } } });
    expect(lines(log)).toEqual(['run', 'prepare v1.txt']);

    await first.kill9();
    const second = await startServerProcess(dataDir, ARGS);
    cleanups.push(() => second.stop());
    // The session outlives the old process (issue 11 item 5: it is in the store), so the new process answers it…
    const again = await session.post({ jsonrpc: '2.0', id: 99, method: 'tasks/get', params: { taskId } }, { url: second.url });
    expect(again.status).toBe(200);
    // …and the reply to our elicitation is routed into the task through the store.
    const reply = await session.post({ jsonrpc: '2.0', id: elicitation.id, result: { ...YES, _meta: { [RELATED_TASK]: { taskId } } } }, { url: second.url });
    expect(reply.status).toBe(202);

    // A new session (the SDK 1.32.2 client) on the new process sees the task finish with that answer.
    const v1 = await connectV1Http(second.url);
    cleanups.push(() => v1.close());
    const done = await pollUntil(
      () => v1.client.experimental.tasks.getTask(taskId),
      (task) => ['completed', 'failed', 'cancelled'].includes(task.status),
      { what: 'terminal' },
    );
    expect(done.status).toBe('completed');
    const result = await v1.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'Deleted v1.txt' }]);
    expect(lines(log)).toEqual(['run', 'prepare v1.txt', 'run', 'apply delete v1.txt']);
  });
});
