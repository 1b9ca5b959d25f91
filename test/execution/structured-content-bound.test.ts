/**
 * Issue 27 §2: the configurable bound on `structuredContent` (`limits.structuredContentMaxBytes`,
 * `--structured-content-max-bytes`). A result over it is delivered unchanged, logged as a warning and counted by
 * the prom-client counter `mcp_tasks_structured_content_oversized_total{tool}` — for inline calls and task runs —
 * over real HTTP against an in-process server on a real SQLite file; a result within it is neither.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { defineTool, textResult } from '../../src/core/tool.js';
import { TasksMetrics } from '../../src/ops/metrics.js';
import { captureLogger } from '../helpers/capture-logger.js';
import { pollUntil, TERMINAL } from '../helpers/official-clients.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { postModern } from '../helpers/wire.js';

const MAX_BYTES = 10_000;

const TOOLS = [
  defineTool({
    name: 'bulky',
    description: 'Returns `items` structured items of ~100 bytes each.',
    execution: 'task-optional',
    inputSchema: z.object({ items: z.number().int().min(0).max(10_000) }),
    async run({ items }) {
      const rows = Array.from({ length: items }, (_, index) => ({ index, text: 'x'.repeat(90) }));
      return textResult(`${items} items`, { structuredContent: { count: items, rows } });
    },
  }),
];

async function oversizedCount(metrics: TasksMetrics): Promise<number> {
  const values = (await metrics.registry.getSingleMetric('mcp_tasks_structured_content_oversized_total')?.get())?.values ?? [];
  return values.filter((value) => value.labels.tool === 'bulky').reduce((sum, value) => sum + value.value, 0);
}

describe('issue 27 §2 structuredContent bound', () => {
  const capture = captureLogger();
  const metrics = new TasksMetrics({ role: 'serve', defaultMetrics: false });
  let running: RunningTasksServer;
  beforeAll(async () => {
    running = await startTasksServer({
      tools: TOOLS,
      logger: capture.logger,
      workerObserver: metrics.workerObserver(),
      limits: { structuredContentMaxBytes: MAX_BYTES },
    });
  });
  afterAll(async () => {
    await running?.close();
  });

  const warnings = () => capture.lines.filter((line) => line.level === 'warn' && String(line.message).startsWith('structuredContent over'));

  it('an inline call over the bound is answered unchanged, logged with its size and counted; one within it is not', async () => {
    const small = await postModern(running.url, 'tools/call', { name: 'bulky', arguments: { items: 10 } }, { capabilities: {} });
    expect(small.body.result).toMatchObject({ structuredContent: { count: 10 } });
    expect(warnings()).toEqual([]);
    expect(await oversizedCount(metrics)).toBe(0);

    const big = await postModern(running.url, 'tools/call', { name: 'bulky', arguments: { items: 500 } }, { capabilities: {} });
    const rows = (big.body.result as { structuredContent: { rows: unknown[] } }).structuredContent.rows;
    expect(rows).toHaveLength(500);
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]?.fields).toMatchObject({ tool: 'bulky', taskId: null, maxBytes: MAX_BYTES, bytes: expect.any(Number) });
    expect(Number(warnings()[0]?.fields.bytes)).toBeGreaterThan(MAX_BYTES);
    expect(await oversizedCount(metrics)).toBe(1);
  });

  it('a task run over the bound is logged with its task id and counted too', async () => {
    const created = await postModern(running.url, 'tools/call', { name: 'bulky', arguments: { items: 400 } });
    const taskId = String((created.body.result as { taskId: string }).taskId);
    await pollUntil(
      () => postModern(running.url, 'tasks/get', { taskId }),
      (answer) => TERMINAL.includes(String((answer.body.result as { status?: string }).status)),
    );
    expect(warnings().map((line) => line.fields.taskId)).toContain(taskId);
    expect(await oversizedCount(metrics)).toBe(2);
  });
});
