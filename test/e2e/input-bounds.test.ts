/**
 * Issue 13 item 9: the server keeps within the rules of the clients people run (Claude Code's 2026-07-28 tasks
 * client: at most 16 distinct `inputRequests` keys per task, task ids of 1–1,024 printable ASCII characters, keys
 * of at most 512, `pollIntervalMs` clamped to 250 ms – 30 s). End to end over real HTTP against a real server on a
 * real SQLite file, on both generations:
 * - an answer failing its schema is asked again at most `MAX_ASKS_PER_QUESTION` times in all, then the task fails
 *   with `data.reason: "input_invalid"` (negative control: a valid answer on the last ask completes);
 * - a tool asking more than `MAX_INPUT_KEYS_PER_TASK` questions over its life fails with `data.reason:
 *   "input_limit"` (negative control: exactly 16 completes);
 * - every task id and input key we mint fits those bounds, and every v2 `pollIntervalMs` lies in 250–30,000 ms
 *   whatever `--poll-interval-ms` says.
 */
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { MAX_ASKS_PER_QUESTION, MAX_INPUT_KEY_LENGTH, MAX_INPUT_KEYS_PER_TASK } from '../../src/core/elicitation.js';
import { type AnyToolDefinition, defineTool, textResult } from '../../src/core/tool.js';
import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import { connectV1Http, pollUntil, rejection, type V1HttpClient } from '../helpers/official-clients.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { pollModernTask, postModern, TASKS_EXTENSION } from '../helpers/wire.js';

const CONFIRM_SCHEMA = { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] };
const ELICITING = { elicitation: { form: {} }, extensions: { [TASKS_EXTENSION]: {} } };
const YES = { action: 'accept', content: { confirm: true } } as const;
const INVALID = { action: 'accept', content: { confirm: 'not a boolean' } } as const;
/** Printable ASCII (0x20–0x7e), the character set Claude Code accepts in task ids and keys. */
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

/** Asks `count` questions one after another (each answer re-runs it, earlier answers replayed). */
const manyQuestions: AnyToolDefinition = defineTool({
  name: 'many_questions',
  description: 'Asks count yes/no questions, one at a time.',
  execution: 'task-optional',
  idempotent: true,
  elicits: true,
  inputSchema: z.object({ count: z.number().int().min(1).max(64) }),
  async run({ count }, ctx) {
    for (let index = 1; index <= count; index += 1) await ctx.elicit({ message: `Question ${index}?`, requestedSchema: CONFIRM_SCHEMA });
    return textResult(`answered ${count}`);
  },
});

const tools = [...conformanceFixtureTools(), manyQuestions];
const terminal = (status: string) => ['completed', 'failed', 'cancelled'].includes(status);

describe('input bounds and wire bounds (issue 13 item 9)', () => {
  let running: RunningTasksServer;

  beforeAll(async () => {
    running = await startTasksServer({ tools, limits: { pollIntervalMs: 50 } });
  });
  afterAll(async () => {
    await running?.close();
  });

  /** Every input key a task ever had, and its id, within the bounds hosts enforce. */
  async function expectWithinHostBounds(taskId: string): Promise<void> {
    expect(taskId.length).toBeGreaterThanOrEqual(1);
    expect(taskId.length).toBeLessThanOrEqual(1024);
    expect(taskId).toMatch(PRINTABLE_ASCII);
    const rows = await running.store.listInputRequests(taskId);
    expect(rows.length).toBeLessThanOrEqual(MAX_INPUT_KEYS_PER_TASK);
    for (const row of rows) {
      expect(row.key.length).toBeLessThanOrEqual(MAX_INPUT_KEY_LENGTH);
      expect(row.key).toMatch(PRINTABLE_ASCII);
    }
  }

  describe('2026-07-28 (Tasks Extension), raw HTTP', () => {
    const create = async (name: string, args: Record<string, unknown>): Promise<string> => {
      const response = await postModern(running.url, 'tools/call', { name, arguments: args }, { capabilities: ELICITING });
      const taskId = response.body.result?.taskId;
      if (typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(response.body)}`);
      return taskId;
    };
    /** Wait for input_required and return its only key. */
    const nextKey = async (taskId: string): Promise<string | undefined> => {
      const task = await pollModernTask(running.url, taskId, { until: (status) => status === 'input_required' || terminal(status) });
      if (task.status !== 'input_required') return undefined;
      const keys = Object.keys(task.inputRequests as object);
      expect(keys).toHaveLength(1);
      return keys[0];
    };
    const update = (taskId: string, key: string, answer: unknown) => postModern(running.url, 'tasks/update', { taskId, inputResponses: { [key]: answer } });

    it(`E23/issue 13 §9 an answer failing its schema is asked at most ${MAX_ASKS_PER_QUESTION} times, then the task fails with data.reason input_invalid`, async () => {
      const taskId = await create('confirm_delete', { filename: 'bounds.txt' });
      const keys: string[] = [];
      for (;;) {
        const key = await nextKey(taskId);
        if (key === undefined) break;
        keys.push(key);
        expect(keys.length).toBeLessThanOrEqual(MAX_ASKS_PER_QUESTION);
        expect((await update(taskId, key, INVALID)).body.result).toBeDefined();
      }
      expect(keys).toEqual(['input-1', 'input-1.2', 'input-1.3']);
      const done = await pollModernTask(running.url, taskId);
      expect(done).toMatchObject({ status: 'failed', error: { code: -32603, data: { reason: 'input_invalid' } } });
      expect(String(done.statusMessage)).toContain('input-1.3');
      await expectWithinHostBounds(taskId);
    });

    it('E23/issue 13 §9 negative control: a valid answer on the last allowed ask completes the task', async () => {
      const taskId = await create('confirm_delete', { filename: 'kept.txt' });
      for (const expected of ['input-1', 'input-1.2']) {
        expect(await nextKey(taskId)).toBe(expected);
        await update(taskId, expected, INVALID);
      }
      expect(await nextKey(taskId)).toBe('input-1.3');
      await update(taskId, 'input-1.3', YES);
      expect(await pollModernTask(running.url, taskId)).toMatchObject({
        status: 'completed',
        result: { content: [{ type: 'text', text: 'Deleted kept.txt' }] },
      });
    });

    it(`E23/issue 13 §9 a tool asking a ${MAX_INPUT_KEYS_PER_TASK + 1}th question fails with data.reason input_limit; ${MAX_INPUT_KEYS_PER_TASK} questions complete`, async () => {
      const answerAll = async (count: number): Promise<{ taskId: string; asked: string[] }> => {
        const taskId = await create('many_questions', { count });
        const asked: string[] = [];
        for (let key = await nextKey(taskId); key !== undefined; key = await nextKey(taskId)) {
          asked.push(key);
          await update(taskId, key, YES);
        }
        return { taskId, asked };
      };
      const within = await answerAll(MAX_INPUT_KEYS_PER_TASK);
      expect(within.asked).toHaveLength(MAX_INPUT_KEYS_PER_TASK);
      expect(await pollModernTask(running.url, within.taskId)).toMatchObject({
        status: 'completed',
        result: { content: [{ type: 'text', text: `answered ${MAX_INPUT_KEYS_PER_TASK}` }] },
      });

      const beyond = await answerAll(MAX_INPUT_KEYS_PER_TASK + 1);
      expect(beyond.asked).toHaveLength(MAX_INPUT_KEYS_PER_TASK);
      const failed = await pollModernTask(running.url, beyond.taskId);
      expect(failed).toMatchObject({ status: 'failed', error: { code: -32603, data: { reason: 'input_limit' } } });
      await expectWithinHostBounds(beyond.taskId);
    }, 60_000);

    it('issue 13 §9 re-asks count toward the 16 keys: a re-ask that would be the 17th key fails with input_limit', async () => {
      const taskId = await create('many_questions', { count: MAX_INPUT_KEYS_PER_TASK });
      for (let index = 1; index < MAX_INPUT_KEYS_PER_TASK; index += 1) {
        const key = await nextKey(taskId);
        await update(taskId, key as string, YES);
      }
      const last = await nextKey(taskId);
      expect(last).toBe(`input-${MAX_INPUT_KEYS_PER_TASK}`);
      await update(taskId, last as string, INVALID);
      expect(await pollModernTask(running.url, taskId)).toMatchObject({ status: 'failed', error: { data: { reason: 'input_limit' } } });
      await expectWithinHostBounds(taskId);
    }, 60_000);
  });

  describe('2025-11-25 with the SDK 1.32.2 client (elicitation on the tasks/result stream)', () => {
    let v1: V1HttpClient;
    let answer: () => ElicitResult = () => ({ action: 'cancel' });
    const asked: string[] = [];

    beforeAll(async () => {
      v1 = await connectV1Http(running.url, { capabilities: { elicitation: { form: {} } } });
      v1.client.setRequestHandler(ElicitRequestSchema, async (_request, extra) => {
        asked.push(String(extra.requestId));
        return answer();
      });
    });
    afterAll(async () => {
      await v1?.close();
    });

    const createV1 = async (name: string, args: Record<string, unknown>): Promise<string> =>
      (await v1.client.request({ method: 'tools/call', params: { name, arguments: args } }, CreateTaskResultSchema, { task: {} })).task.taskId;

    it(`R25/issue 13 §9 invalid answers: asked ${MAX_ASKS_PER_QUESTION} times, then tasks/result replays -32603 with data.reason input_invalid`, async () => {
      asked.length = 0;
      answer = () => INVALID as unknown as ElicitResult;
      const taskId = await createV1('confirm_delete', { filename: 'v1-bounds.txt' });
      await pollUntil(
        () => v1.client.experimental.tasks.getTask(taskId),
        (task) => task.status === 'input_required',
        { what: 'input_required' },
      );
      const error = await rejection(v1.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema));
      expect(error).toMatchObject({ code: -32603, data: { reason: 'input_invalid' } });
      expect(asked).toEqual([`mcp-tasks-input/${taskId}/input-1`, `mcp-tasks-input/${taskId}/input-1.2`, `mcp-tasks-input/${taskId}/input-1.3`]);
      expect((await v1.client.experimental.tasks.getTask(taskId)).status).toBe('failed');
      await expectWithinHostBounds(taskId);
    });

    it(`R25/issue 13 §9 a ${MAX_INPUT_KEYS_PER_TASK + 1}th question fails the task with data.reason input_limit (${MAX_INPUT_KEYS_PER_TASK} answered first)`, async () => {
      asked.length = 0;
      answer = () => YES as unknown as ElicitResult;
      const taskId = await createV1('many_questions', { count: MAX_INPUT_KEYS_PER_TASK + 1 });
      await pollUntil(
        () => v1.client.experimental.tasks.getTask(taskId),
        (task) => task.status === 'input_required',
        { what: 'input_required' },
      );
      const error = await rejection(v1.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema));
      expect(error).toMatchObject({ code: -32603, data: { reason: 'input_limit' } });
      expect(asked).toHaveLength(MAX_INPUT_KEYS_PER_TASK);
      await expectWithinHostBounds(taskId);
    }, 60_000);
  });
});

describe('E11/issue 13 §9 pollIntervalMs stays within 250 ms – 30 s on 2026-07-28 whatever --poll-interval-ms says', () => {
  for (const configured of [1, 120_000]) {
    it(`configured ${configured} ms: every pollIntervalMs a requestor sees is within 250–30000`, async () => {
      const running = await startTasksServer({ tools: conformanceFixtureTools(), limits: { pollIntervalMs: configured } });
      try {
        const created = await postModern(running.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0.3 } });
        const taskId = created.body.result?.taskId as string;
        const hints = [created.body.result?.pollIntervalMs];
        for (let poll = 0; poll < 3; poll += 1) hints.push((await postModern(running.url, 'tasks/get', { taskId })).body.result?.pollIntervalMs);
        hints.push((await pollModernTask(running.url, taskId)).pollIntervalMs);
        for (const hint of hints) {
          expect(hint).toEqual(expect.any(Number));
          expect(hint).toBeGreaterThanOrEqual(250);
          expect(hint).toBeLessThanOrEqual(30_000);
        }
      } finally {
        await running.close();
      }
    });
  }
});
