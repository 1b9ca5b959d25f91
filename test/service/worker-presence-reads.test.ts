/**
 * Issue 26 item 6, the reads the process test (test/e2e/worker-absent.test.ts) cannot reach without authentication:
 * an API server without a worker, over loopback HTTP with a token file, where `tasks/list` exists (2025-11-25 R37,
 * advertised with authentication). While the store's process registry has no live worker, the v1 create answer,
 * `tasks/get` and `tasks/list` all say "waiting for a worker"; once a worker process is registered and live, they
 * say what the tool said.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { TokenFileAuthenticator } from '../../src/auth/token-file.js';
import { systemClock } from '../../src/core/clock.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { WorkerPresence } from '../../src/service/worker-presence.js';
import { RawLegacySession } from '../helpers/sse.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const TOKEN = 'presence-reads-token-0123456789';
const WAITING = /^waiting for a worker \(no worker process is running: none seen since this server started\); the task starts when one runs$/;

const scan = defineTool({
  name: 'announced_scan',
  description: 'Says it started scanning.',
  execution: 'task-optional',
  inputSchema: z.object({ target: z.string() }),
  immediateResponse: ({ target }) => `Started scanning ${target}`,
  async run({ target }) {
    return textResult(`scanned ${target}`);
  },
});

describe('an API server with no live worker: every v1 read says "waiting for a worker" (issue 26 item 6)', () => {
  const temp = makeTempDir('mcp-tasks-presence-reads-');
  let running: RunningTasksServer;
  let presence: WorkerPresence | undefined;

  beforeAll(async () => {
    const tokens = join(temp.dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ tokens: [{ token: TOKEN, issuer: 'https://issuer.test', subject: 'alice', tenant: 'acme' }] }));
    running = await startTasksServer({
      tools: [scan],
      auth: TokenFileAuthenticator.fromFile(tokens),
      worker: false,
      workers: (store) => (presence = new WorkerPresence(store, systemClock, { absentAfterMs: 0, refreshMs: 60_000 })),
    });
    await presence?.refresh();
  });
  afterAll(async () => {
    presence?.stop();
    await running?.close();
    temp.remove();
  });

  it("R12/R14 create answer, R21 tasks/get and R37/R38 tasks/list; with a live worker registered, the tool's own words", async () => {
    const session = await RawLegacySession.open(running.url, { token: TOKEN });
    const created = await session.request('tools/call', { name: 'announced_scan', arguments: { target: 'fleet-a' }, task: {} });
    const task = (created.body.result as { task: Record<string, unknown> }).task;
    expect(task).toMatchObject({ status: 'working', statusMessage: expect.stringMatching(WAITING) });
    const read = async () => ({
      got: (await session.request('tasks/get', { taskId: task.taskId })).body.result as Record<string, unknown>,
      listed: ((await session.request('tasks/list')).body.result as { tasks: Array<Record<string, unknown>> }).tasks.find((row) => row.taskId === task.taskId),
    });
    const waiting = await read();
    expect(waiting.got).toMatchObject({ statusMessage: expect.stringMatching(WAITING) });
    expect(waiting.listed).toMatchObject({ statusMessage: expect.stringMatching(WAITING) });

    // Negative control: a worker process registers in the store's registry (live heartbeat); at the next look the
    // same reads show the stored message, the tool's immediate response.
    await running.store.registerProcess({ instanceId: 'w-1', role: 'worker', token: 't-w-1', host: 'h', pid: 1, settingsDigest: 'x' }, 60_000);
    await presence?.refresh();
    const seen = await read();
    expect(seen.got).toMatchObject({ statusMessage: 'Started scanning fleet-a' });
    expect(seen.listed).toMatchObject({ statusMessage: 'Started scanning fleet-a' });
  });
});
