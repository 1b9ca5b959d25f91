/**
 * Issue 28 over Streamable HTTP with the real `@modelcontextprotocol/server-everything` 2026.8.31 (its `streamableHttp`
 * mode, bound to 127.0.0.1 by test/fixtures/loopback-listen.mjs): its long-running operation with progress and its
 * elicitation tool through `serve --upstream evh=http://127.0.0.1:…/mcp`, on the 2026-07-28 wire.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ensureBuilt } from '../cli/support.js';
import { freePort, type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { everythingServer } from '../helpers/upstream-servers.js';
import { pollModernTask, postModern, TASKS_EXTENSION } from '../helpers/wire.js';

const LOOPBACK = join(import.meta.dirname, '..', 'fixtures', 'loopback-listen.mjs');
const ELICITING = { elicitation: { form: {} }, extensions: { [TASKS_EXTENSION]: {} } };
const texts = (result: unknown): string => ((result as { content?: Array<{ text?: string }> }).content ?? []).map((block) => block.text ?? '').join('\n');

describe('serve --upstream with server-everything over Streamable HTTP (issue 28)', () => {
  const temp = makeTempDir('mcp-tasks-upstream-evh-');
  let everything: ChildProcess;
  let server: ServerProcess;

  beforeAll(async () => {
    ensureBuilt();
    const port = await freePort();
    everything = spawn(process.execPath, ['--import', LOOPBACK, everythingServer(), 'streamableHttp'], {
      env: { ...process.env, PORT: String(port) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    await new Promise<void>((resolve, reject) => {
      let stderr = '';
      everything.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
        if (stderr.includes('listening on port')) resolve();
      });
      everything.once('exit', () => reject(new Error(`server-everything exited: ${stderr}`)));
    });
    server = await startServerProcess(join(temp.dir, 'data'), [
      '--no-builtins',
      '--upstream',
      `evh=http://127.0.0.1:${port}/mcp`,
      '--status-flush-interval-ms',
      '50',
    ]);
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    everything?.kill('SIGKILL');
    temp.remove();
  });

  it('E8/E14 the long-running operation is a task whose progress shows in statusMessage, completed with the upstream result', async () => {
    const created = await postModern(
      server.url,
      'tools/call',
      { name: 'evh_trigger-long-running-operation', arguments: { duration: 2, steps: 4 } },
      { capabilities: ELICITING },
    );
    const taskId = created.body.result?.taskId as string;
    expect(created.body.result?.resultType).toBe('task');
    // Every statusMessage seen while it works is the upstream's progress, attributed to it.
    const seen = new Set<string>();
    const done = await pollModernTask(server.url, taskId, {
      until: (status) => status !== 'working',
      timeoutMs: 15_000,
      onPoll: (task) => {
        if (typeof task.statusMessage === 'string') seen.add(task.statusMessage);
      },
    });
    expect([...seen].some((message) => /^evh: .*\(\d\/4\)$/.test(message))).toBe(true);
    expect(done.status).toBe('completed');
    expect(texts(done.result)).toBe('Long running operation completed. Duration: 2 seconds, Steps: 4.');
  }, 30_000);

  it("E25/E21 its elicitation request, sent on the call's stream, makes the task input_required; tasks/update answers it and the call completes", async () => {
    const created = await postModern(server.url, 'tools/call', { name: 'evh_trigger-elicitation-request', arguments: {} }, { capabilities: ELICITING });
    const taskId = created.body.result?.taskId as string;
    const waiting = await pollModernTask(server.url, taskId, { until: (status) => status !== 'working' });
    expect(waiting.status).toBe('input_required');
    const question = (waiting.inputRequests as Record<string, { params: { message: string } }>)['input-1'];
    expect(question?.params.message).toBe('evh: Please provide inputs for the following fields:');
    const update = await postModern(server.url, 'tasks/update', { taskId, inputResponses: { 'input-1': { action: 'accept', content: { name: 'Grace' } } } });
    expect(update.body.error).toBeUndefined();
    const done = await pollModernTask(server.url, taskId);
    expect(done.status).toBe('completed');
    expect(texts(done.result)).toContain('"name": "Grace"');
  }, 30_000);
});
