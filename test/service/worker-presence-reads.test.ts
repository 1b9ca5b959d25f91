/**
 * Issue 26 item 6, the reads the process test (test/e2e/worker-absent.test.ts) cannot reach without authentication:
 * an API server without a worker, over loopback HTTP with a token file, where `tasks/list` exists (2025-11-25 R37,
 * advertised with authentication), and the task fallback tools' answers to a host without task support. While the
 * store's process registry has no live worker, the v1 create answer, `tasks/get`, `tasks/list` and the fallback
 * answers all say "waiting for a worker"; once a worker process is registered and live, they say what the tool said.
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

/** Task-required: a host without task support gets it through the task fallback tools. */
const audit = defineTool({
  name: 'announced_audit',
  description: 'Says it started auditing.',
  execution: 'task-required',
  inputSchema: z.object({ target: z.string() }),
  immediateResponse: ({ target }) => `Started auditing ${target}`,
  async run({ target }) {
    return textResult(`audited ${target}`);
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
      tools: [scan, audit],
      taskFallbackTools: true,
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

  it("R12/R14 create answer, R21 tasks/get, R37/R38 tasks/list and the task fallback tools' answers; with a live worker registered, the tool's own words", async () => {
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

    // A host without task support (no capabilities.tasks) calls the task-required tool: the fallback answer's text —
    // what its model reads — and its facts say the task waits, besides the tool's own words.
    const host = await RawLegacySession.open(running.url, { token: TOKEN, capabilities: {} });
    const fallback = (await host.request('tools/call', { name: 'announced_audit', arguments: { target: 'repo-a' } })).body.result as {
      content: Array<{ text: string }>;
      structuredContent: Record<string, unknown>;
    };
    expect(fallback.content[0]?.text).toMatch(/^Started auditing repo-a\nStarted as task \S+ \(status: working: waiting for a worker \(/);
    expect(fallback.structuredContent).toMatchObject({ status: 'working', statusMessage: expect.stringMatching(WAITING) });
    const status = (await host.request('tools/call', { name: 'get_task_status', arguments: { taskId: fallback.structuredContent.taskId } })).body.result as {
      content: Array<{ text: string }>;
    };
    expect(status.content[0]?.text).toMatch(/ is working \(waiting for a worker \(/);

    // Negative control: a worker process registers in the store's registry (live heartbeat); at the next look the
    // same reads show the stored message, the tool's immediate response.
    await running.store.registerProcess({ instanceId: 'w-1', role: 'worker', token: 't-w-1', host: 'h', pid: 1, settingsDigest: 'x' }, 60_000);
    await presence?.refresh();
    const seen = await read();
    expect(seen.got).toMatchObject({ statusMessage: 'Started scanning fleet-a' });
    expect(seen.listed).toMatchObject({ statusMessage: 'Started scanning fleet-a' });
  });
});
