/**
 * `resumeCall` of a call whose answer was lost, when the server honours idempotency keys: the resend with the same
 * key either finds the task the first send created or — for a call the server answered inline (a `sync` tool) — is
 * refused because the key is used. That refusal is proof the first send ran (stop 43's review): outcome unknown,
 * never "bad input", and the tool does not run again.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { connectTasksClient, TaskJournal, ToolCallOutcomeUnknownError } from '../../src/client/index.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';

describe.each(['2025-11-25', '2026-07-28'] as const)('resumeCall over %s', (protocol) => {
  const temp = makeTempDir('mcp-tasks-resume-call-');
  let runs = 0;
  let running: RunningTasksServer;
  beforeAll(async () => {
    const inline = defineTool({
      name: 'inline_effect',
      description: 'an effect, answered inline',
      execution: 'sync',
      inputSchema: z.object({ label: z.string() }),
      async run({ label }) {
        runs += 1;
        return textResult(`effect ${label}`);
      },
    });
    running = await startTasksServer({ tools: [inline] });
  });
  afterAll(async () => {
    await running.close();
    temp.remove();
  });

  it('a sync call that ran (its answer lost): the resend is refused as key used, which is an unknown outcome (it ran), and it does not run again', async () => {
    const journal = join(temp.dir, `${protocol}.json`);
    const client = await connectTasksClient({ url: running.url, protocol, journal });
    try {
      const first = await client.callTool('inline_effect', { label: 'a' });
      if (first.kind !== 'result') throw new Error(`expected an inline result, got ${first.kind}`);
      expect(runs).toBe(1);
      // The journal's evidence of that call, as if its answer had been lost.
      const pending = {
        correlationId: randomUUID(),
        idempotencyKey: first.idempotencyKey,
        url: client.url,
        generation: client.generation,
        protocolVersion: client.protocolVersion,
        tool: 'inline_effect',
        arguments: { label: 'a' },
        sentAt: new Date().toISOString(),
        idempotencyHonoured: true,
      };
      await new TaskJournal(journal).addPending(pending);
      const error = await client.resumeCall(pending).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ToolCallOutcomeUnknownError);
      expect((error as Error).message).toContain(`correlation id ${pending.correlationId}) reached the server, which has its key but no result to give`);
      expect(runs).toBe(1);
      // Control: a fresh key is a new call, and runs.
      const second = await client.callTool('inline_effect', { label: 'b' });
      expect(second.kind).toBe('result');
      expect(runs).toBe(2);
    } finally {
      await client.close();
    }
  });
});
