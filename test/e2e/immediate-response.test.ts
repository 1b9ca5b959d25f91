/**
 * Issue 13 item 6: a tool's `immediateResponse` — what it started and roughly how long it takes — reaches the
 * model: as 2025-11-25 `CreateTaskResult._meta["io.modelcontextprotocol/model-immediate-response"]` (R15) and as
 * the task's initial `statusMessage` (SEP-2663 E11) on both generations, and as `outcome.immediateResponse` of our
 * client. End to end over real HTTP against a real server on a real SQLite file: the SDK 1.32.2 client (v1), raw
 * 2026-07-28 requests (v2), our `TasksClient` on both, the built-in tools. Secrets in the text never reach the wire.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { connectTasksClient } from '../../src/client/index.js';
import { type AnyToolDefinition, defineTool, textResult } from '../../src/core/tool.js';
import { builtinTools } from '../../src/tools/index.js';
import { connectV1Http, pollUntil, type V1HttpClient } from '../helpers/official-clients.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { pollModernTask, postModern } from '../helpers/wire.js';
import { PLANTED_SECRETS } from '../tools/planted-secrets.js';

const IMMEDIATE = 'io.modelcontextprotocol/model-immediate-response';
/** Where Claude Code reads it (issue 27 §1). */
const AGENT_TASK = 'com.anthropic/agent-task';
/** One-line planted secrets (the PEM block spans lines): each becomes part of a note the tool echoes. */
const SECRET_LINES = PLANTED_SECRETS.filter((planted) => planted.lines.length === 1);

const tools: AnyToolDefinition[] = [
  defineTool({
    name: 'export_report',
    description: 'Exports a report; says so at once.',
    execution: 'task-optional',
    idempotent: true,
    inputSchema: z.object({ name: z.string(), note: z.string().default(''), seconds: z.number().default(0.2) }),
    immediateResponse: ({ name, note }) => `Started exporting ${name}; about 2 minutes.${note ? ` Note:\n${note}` : ''}`,
    async run({ name, seconds }) {
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
      return textResult(`Exported ${name}`);
    },
  }),
  defineTool({
    name: 'silent_job',
    description: 'Has no immediate response.',
    execution: 'task-optional',
    idempotent: true,
    inputSchema: z.object({}),
    async run() {
      return textResult('done');
    },
  }),
  defineTool({
    name: 'throwing_hint',
    description: 'Its immediateResponse throws: the task is created without one.',
    execution: 'task-optional',
    idempotent: true,
    inputSchema: z.object({}),
    immediateResponse: () => {
      throw new Error('no hint today');
    },
    async run() {
      return textResult('done');
    },
  }),
];

describe('immediate response (issue 13 item 6)', () => {
  let running: RunningTasksServer;
  let v1: V1HttpClient;
  beforeAll(async () => {
    running = await startTasksServer({ tools, limits: { pollIntervalMs: 100 } });
    v1 = await connectV1Http(running.url);
  });
  afterAll(async () => {
    await v1?.close();
    await running?.close();
  });

  const createV1 = (name: string, args: Record<string, unknown>) =>
    v1.client.request({ method: 'tools/call', params: { name, arguments: args } }, CreateTaskResultSchema, { task: {} });

  it('R15 v1: CreateTaskResult._meta carries the text, the task keeps it as statusMessage while the tool runs', async () => {
    const created = await createV1('export_report', { name: 'Q3', seconds: 1 });
    expect(created._meta).toEqual({
      [IMMEDIATE]: 'Started exporting Q3; about 2 minutes.',
      [AGENT_TASK]: { modelImmediateResponse: 'Started exporting Q3; about 2 minutes.' },
    });
    expect(created.task.statusMessage).toBe('Started exporting Q3; about 2 minutes.');
    // The worker starting the run keeps it (it only clears "queued" or an earlier run's words).
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await v1.client.experimental.tasks.getTask(created.task.taskId)).statusMessage).toBe('Started exporting Q3; about 2 minutes.');
  });

  it('R15 negative control: a tool without immediateResponse (or whose immediateResponse throws) answers without _meta', async () => {
    for (const name of ['silent_job', 'throwing_hint']) {
      const created = await createV1(name, {});
      expect(created._meta).toBeUndefined();
      expect(created.task.statusMessage).toBeUndefined();
      await pollUntil(
        () => v1.client.experimental.tasks.getTask(created.task.taskId),
        (task) => task.status === 'completed',
        { what: `${name} completed` },
      );
    }
  });

  it('E11 v2: the CreateTaskResult and tasks/get carry the text as the initial statusMessage', async () => {
    const created = await postModern(running.url, 'tools/call', { name: 'export_report', arguments: { name: 'Q4', seconds: 1 } });
    expect(created.body.result).toMatchObject({ resultType: 'task', status: 'working', statusMessage: 'Started exporting Q4; about 2 minutes.' });
    const taskId = created.body.result?.taskId as string;
    // Issue 27 §1: Claude Code ignores statusMessage and reads the text from _meta["com.anthropic/agent-task"].
    expect(created.body.result?._meta).toMatchObject({
      [IMMEDIATE]: 'Started exporting Q4; about 2 minutes.',
      [AGENT_TASK]: { modelImmediateResponse: 'Started exporting Q4; about 2 minutes.' },
    });
    expect((await postModern(running.url, 'tasks/get', { taskId })).body.result).toMatchObject({ statusMessage: 'Started exporting Q4; about 2 minutes.' });
    expect(await pollModernTask(running.url, taskId)).toMatchObject({ status: 'completed' });
    // Negative control: a tool without an immediate response answers without _meta.
    const silent = await postModern(running.url, 'tools/call', { name: 'silent_job', arguments: {} });
    expect(silent.body.result).toMatchObject({ resultType: 'task' });
    const meta = (silent.body.result?._meta ?? {}) as Record<string, unknown>;
    expect(meta[AGENT_TASK]).toBeUndefined();
    expect(meta[IMMEDIATE]).toBeUndefined();
    await pollModernTask(running.url, silent.body.result?.taskId as string);
  });

  it('issue 13 §6 secrets in the text are redacted (and control characters stripped) in _meta, statusMessage and the store, on both generations', async () => {
    for (const planted of SECRET_LINES) {
      const note = planted.lines[0] as string;
      const v1Created = await createV1('export_report', { name: 'secret', note });
      const v2Created = await postModern(running.url, 'tools/call', { name: 'export_report', arguments: { name: 'secret', note } });
      const stored = [await running.store.getUnscoped(v1Created.task.taskId), await running.store.getUnscoped(v2Created.body.result?.taskId as string)];
      const seen = JSON.stringify([v1Created, v2Created.body, stored.map((record) => record?.statusMessage)]);
      for (const value of planted.values) expect(seen, planted.kind).not.toContain(value);
      expect(String(v1Created._meta?.[IMMEDIATE])).toMatch(/^Started exporting secret; about 2 minutes\. Note: /);
      expect(String(v1Created._meta?.[IMMEDIATE])).not.toContain('\n');
    }
  });

  it('issue 13 §6 our client exposes it as outcome.immediateResponse on both generations', async () => {
    for (const protocol of ['2025-11-25', '2026-07-28'] as const) {
      const client = await connectTasksClient({ url: running.url, protocol, journal: false });
      try {
        const outcome = await client.callTool('export_report', { name: protocol }, { task: 'required' });
        expect(outcome).toMatchObject({ kind: 'task', immediateResponse: `Started exporting ${protocol}; about 2 minutes.` });
      } finally {
        await client.close();
      }
    }
  });
});

describe('built-in tools say what they started and roughly how long it takes (issue 13 §6)', () => {
  const root = mkdtempSync(join(tmpdir(), 'mcp-tasks-immediate-'));
  let running: RunningTasksServer;
  beforeAll(async () => {
    writeFileSync(join(root, 'app.log'), '2024-01-01T00:00:00Z INFO started\n');
    running = await startTasksServer({ tools: builtinTools({ roots: [root] }), roots: [root] });
  });
  afterAll(async () => {
    await running?.close();
    rmSync(root, { recursive: true, force: true });
  });

  for (const [name, starts] of [
    ['analyze_logs', 'Started scanning'],
    ['audit_repository', 'Started auditing the repository'],
  ] as const) {
    it(`${name}: the v2 task's initial statusMessage names the path and a rough duration`, async () => {
      const created = await postModern(running.url, 'tools/call', { name, arguments: { path: root } });
      const message = String(created.body.result?.statusMessage);
      expect(message.startsWith(`${starts} ${root}`) || message.startsWith(`${starts} at ${root}`)).toBe(true);
      expect(message).toMatch(/seconds .* minutes/);
      await pollModernTask(running.url, created.body.result?.taskId as string);
    });
  }

  it("check_infrastructure: the v2 task's initial statusMessage counts the targets and bounds the duration", async () => {
    const created = await postModern(running.url, 'tools/call', { name: 'check_infrastructure', arguments: { targets: [join(root, 'app.log')] } });
    expect(String(created.body.result?.statusMessage)).toMatch(/^Started checking 1 target \(.*\); .*timeout/);
    await pollModernTask(running.url, created.body.result?.taskId as string);
  });
});
