import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { TokenFileAuthenticator } from '../../src/auth/token-file.js';
import type { AuditRecord } from '../../src/core/ledger.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { requestDigest } from '../../src/ledger/digest.js';
import { captureLogger } from '../helpers/capture-logger.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

// Planted secrets: the token, a password argument, an answered value, a personal claim-like e-mail argument.
const TOKEN = 'tok-PLANTED-b7c1e0f2a9d84c3e';
// The scopes the token grants: every audit entry of a request records them (identifiers, not secrets).
const GRANTED = ['tasks:read', 'tasks:cancel', 'tasks:answer', 'reports:write'] as const;
const PASSWORD = 'pw-PLANTED-4f9a1c77e2';
const PIN = 'pin-PLANTED-90e3d1';
const EMAIL = 'alice.PLANTED@example.org';
const PLANTED = [TOKEN, PASSWORD, PIN, EMAIL];
const OWNER = 'https://issuer.example|alice|acme';
const ELICITING = { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } };

describe('issue 12: the audit trail records who did what, and never a secret', () => {
  let running: RunningTasksServer;
  const captured = captureLogger();
  beforeAll(async () => {
    const secretJob = defineTool({
      name: 'secret_job',
      description: 'takes a password and an e-mail, performs one effect',
      execution: 'task-required',
      journaled: true,
      operations: { 'demo.effect': { reconcile: async () => ({ status: 'not_applied' as const }) } },
      inputSchema: z.object({ password: z.string(), email: z.string() }),
      async run(_args, ctx) {
        await ctx.operation({ key: 'one', effect: 'demo.effect', target: 'demo' }, async () => ({ ref: 'R1' }));
        return textResult('done');
      },
    });
    const askingJob = defineTool({
      name: 'pin_job',
      description: 'asks for a PIN while running',
      execution: 'task-required',
      journaled: true,
      elicits: true,
      inputSchema: z.object({}),
      async run(_args, ctx) {
        const answer = await ctx.elicit({ message: 'PIN?', requestedSchema: { type: 'object', properties: { pin: { type: 'string' } }, required: ['pin'] } });
        return textResult(answer.action === 'accept' ? 'approved' : 'refused');
      },
    });
    const waitingJob = defineTool({
      name: 'waiting_job',
      description: 'waits until cancelled',
      execution: 'task-required',
      idempotent: true,
      inputSchema: z.object({}),
      async run(_args, ctx) {
        await new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }));
        return textResult('unreachable');
      },
    });
    const auth = new TokenFileAuthenticator({
      tokens: [{ token: TOKEN, issuer: 'https://issuer.example', subject: 'alice', tenant: 'acme', scopes: [...GRANTED] }],
    });
    running = await startTasksServer({ tools: [secretJob, askingJob, waitingJob], auth, logger: captured.logger });
  });
  afterAll(async () => {
    await running.close();
  });

  it('records calls (argument digest), task ends, approvals (key and action), operations and cancellations; no planted secret anywhere', async () => {
    const args = { password: PASSWORD, email: EMAIL };
    const created = await postModern(running.url, 'tools/call', { name: 'secret_job', arguments: args }, { token: TOKEN });
    const secretTask = (created.body.result as any).taskId as string;
    await pollModernTask(running.url, secretTask, { token: TOKEN });

    const asked = await postModern(running.url, 'tools/call', { name: 'pin_job', arguments: {} }, { token: TOKEN, capabilities: ELICITING });
    const pinTask = (asked.body.result as any).taskId as string;
    const waiting = await pollModernTask(running.url, pinTask, { token: TOKEN, until: (status) => status === 'input_required' });
    const [key] = Object.keys(waiting.inputRequests as object);
    await postModern(
      running.url,
      'tasks/update',
      { taskId: pinTask, inputResponses: { [key as string]: { action: 'accept', content: { pin: PIN } } } },
      { token: TOKEN },
    );
    expect((await pollModernTask(running.url, pinTask, { token: TOKEN })).status).toBe('completed');

    const started = await postModern(running.url, 'tools/call', { name: 'waiting_job', arguments: {} }, { token: TOKEN });
    const waitingTask = (started.body.result as any).taskId as string;
    await postModern(running.url, 'tasks/cancel', { taskId: waitingTask }, { token: TOKEN });
    const refused = await postModern(running.url, 'tools/call', { name: 'secret_job', arguments: { password: 1 } }, { token: TOKEN });
    expect(refused.body.result).toMatchObject({ isError: true });

    await new Promise((resolve) => setTimeout(resolve, 200));
    const audit: AuditRecord[] = await running.store.listAudit({ limit: 1000 });
    const of = (taskId: string) => audit.filter((entry) => entry.taskId === taskId).map((entry) => [entry.kind, entry.outcome]);
    expect(of(secretTask)).toEqual([
      ['call', 'task working'],
      ['operation', 'pending'],
      ['operation', 'confirmed'],
      ['task.ended', 'completed'],
    ]);
    expect(audit.find((entry) => entry.taskId === secretTask && entry.kind === 'call')).toMatchObject({
      ownerKey: OWNER,
      scopes: GRANTED.join(' '),
      tool: 'secret_job',
      argumentsDigest: requestDigest('secret_job', args),
    });
    expect(audit.find((entry) => entry.taskId === pinTask && entry.kind === 'input.answered')).toMatchObject({
      ownerKey: OWNER,
      scopes: GRANTED.join(' '),
      outcome: 'accept',
      detail: { key },
    });
    expect(audit.find((entry) => entry.taskId === waitingTask && entry.kind === 'cancel')).toMatchObject({
      ownerKey: OWNER,
      scopes: GRANTED.join(' '),
      outcome: 'cancelled',
      tool: 'waiting_job',
    });

    const haystack = JSON.stringify(audit) + JSON.stringify(captured.lines);
    expect(haystack.length).toBeGreaterThan(500);
    for (const secret of PLANTED) expect(haystack, `planted secret ${secret} leaked`).not.toContain(secret);
    // Negative control: the planted values did reach the server (the tools saw them), so the grep can fail.
    expect(JSON.stringify((await running.store.getUnscoped(secretTask))?.arguments)).toContain(PASSWORD);
  });

  it('outlives the task and has its own retention', async () => {
    const before = (await running.store.listAudit({ limit: 1000 })).length;
    expect(before).toBeGreaterThan(0);
    expect(await running.store.purgeAudit(Date.now() - 60_000, 100)).toBe(0);
    expect(await running.store.purgeAudit(Date.now() + 1, 10_000)).toBe(before);
  });
});
