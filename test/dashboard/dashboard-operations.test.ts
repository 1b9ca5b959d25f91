/**
 * The dashboard's operations view, reconcile and overview over HTTP (issue 16): who sees which ledger rows, who may
 * reconcile (own rows: tasks:cancel; any: admin:write; admin:read alone never), the reconcile really asking the
 * tool's reconciler and the new outcome shown on the task page; answering another owner's question needs
 * tasks:answer AND admin:write; the overview counts only the viewer's tasks. Each refusal has its allowed twin.
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { TokenFileAuthenticator } from '../../src/auth/token-file.js';
import { silentLogger } from '../../src/core/logger.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { viewerVerifier } from '../../src/dashboard/verifier.js';
import { Scope } from '../../src/protocol/scopes.js';
import { serveDashboard, type ServedDashboard } from '../helpers/dashboard-server.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { postModern } from '../helpers/wire.js';

const V2 = { capabilities: { elicitation: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } } };
const principal = (subject: string) => ({ issuer: 'https://issuer.test', subject, tenant: 'acme' });
const TOKENS = {
  alice: { token: 'alice-token-0123456789', ...principal('alice') },
  bob: { token: 'bob-token-0123456789ab', ...principal('bob') },
  aliceReadOnly: { token: 'alice-ro-token-0123456', ...principal('alice'), scopes: [Scope.TasksRead] },
  auditor: { token: 'auditor-token-0123456', ...principal('auditor'), scopes: [Scope.AdminRead] },
  answerer: { token: 'answerer-token-012345', ...principal('answerer'), scopes: [Scope.AdminRead, Scope.TasksAnswer] },
  admin: { token: 'admin-token-0123456789', ...principal('admin'), scopes: [Scope.AdminRead, Scope.AdminWrite, Scope.TasksAnswer] },
};

describe('dashboard HTTP: operations, reconcile, overview and the answer rule (issue 16)', () => {
  const temp = makeTempDir('mcp-tasks-dashboard-ops-');
  const ledger = join(temp.dir, 'bank.txt');
  let running: RunningTasksServer;
  let dashboard: ServedDashboard;
  let base: string;

  beforeAll(async () => {
    writeFileSync(ledger, '');
    // The system of record is a file: a line "<operationId> <ref>" means the payment happened.
    const operations = {
      'bank.pay': {
        reconcile: async ({ operationId }: { operationId: string }) => {
          const { readFileSync } = await import('node:fs');
          const line = readFileSync(ledger, 'utf8')
            .split('\n')
            .find((entry) => entry.startsWith(`${operationId} `));
          return line
            ? { status: 'confirmed' as const, receipt: { ref: line.slice(operationId.length + 1) } }
            : { status: 'unknown' as const, detail: 'no record yet' };
        },
      },
    };
    const pay = defineTool({
      name: 'pay',
      description: 'a payment whose answer times out',
      execution: 'task-required',
      journaled: true,
      operations,
      inputSchema: z.object({}),
      async run(_args, ctx) {
        await ctx.operation({ key: 'pay', effect: 'bank.pay', target: 'acct-42' }, async () => {
          throw new Error('timed out');
        });
        return textResult('paid');
      },
    });
    const ask = defineTool({
      name: 'ask',
      description: 'asks for approval',
      execution: 'task-required',
      elicits: true,
      idempotent: true,
      inputSchema: z.object({}),
      async run(_args, ctx) {
        const answer = await ctx.elicit({ message: 'ok?', requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] } });
        return textResult(answer.action);
      },
    });
    const tokenFile = join(temp.dir, 'tokens.json');
    writeFileSync(tokenFile, JSON.stringify({ tokens: Object.values(TOKENS) }));
    const auth = TokenFileAuthenticator.fromFile(tokenFile);
    running = await startTasksServer({ tools: [pay, ask], auth });
    dashboard = await serveDashboard({
      service: running.server.service.viewer,
      verify: viewerVerifier(auth),
      anonymous: { ownerKey: 'anonymous', scopes: [] },
      allowedHosts: ['127.0.0.1'],
      logger: silentLogger,
    });
    base = dashboard.base;
  });

  afterAll(async () => {
    await dashboard.close();
    await running.close();
    temp.remove();
  });

  async function signIn(token: string) {
    const response = await fetch(`${base}/dashboard/login`, {
      method: 'POST',
      body: new URLSearchParams({ token }),
      redirect: 'manual',
      headers: { origin: base },
    });
    expect(response.status).toBe(303);
    const cookie = (response.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const session: any = await (await fetch(`${base}/dashboard/api/session`, { headers: { cookie } })).json();
    const get = async (path: string): Promise<{ status: number; body: any }> => {
      const answer = await fetch(`${base}/dashboard/api${path}`, { headers: { cookie } });
      return { status: answer.status, body: await answer.json() };
    };
    const post = async (path: string, body: unknown = {}, csrf: string = session.csrf): Promise<{ status: number; body: any }> => {
      const answer = await fetch(`${base}/dashboard/api${path}`, {
        method: 'POST',
        headers: { cookie, origin: base, 'content-type': 'application/json', 'x-csrf-token': csrf },
        body: JSON.stringify(body),
      });
      return { status: answer.status, body: await answer.json() };
    };
    return { get, post };
  }

  async function call(token: string, name: string): Promise<string> {
    const created = await postModern(running.url, 'tools/call', { name, arguments: {} }, { ...V2, token });
    return created.body.result?.taskId as string;
  }

  async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
    for (let i = 0; i < 400; i += 1) {
      const value = await read();
      if (done(value)) return value;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error(`condition not reached in 10 s: ${JSON.stringify(await read()).slice(0, 600)}`);
  }

  it('lists unknown operations per viewer; reconcile: refused for admin:read alone, hidden from another owner, done by the owner; the task page shows the new outcome', async () => {
    const taskId = await call(TOKENS.alice.token, 'pay');
    const alice = await signIn(TOKENS.alice.token);
    const listed = await until(
      () => alice.get('/operations'),
      (answer) => answer.body.operations.some((op: any) => op.taskId === taskId),
    );
    const operation = listed.body.operations.find((op: any) => op.taskId === taskId);
    expect(operation).toMatchObject({ status: 'unknown', effect: 'bank.pay', target: 'acct-42', tool: 'pay', mayReconcile: true });

    // Another owner neither sees it in the list nor can reconcile it (404, like an unknown id).
    const bob = await signIn(TOKENS.bob.token);
    expect((await bob.get('/operations?status=all')).body.operations.map((op: any) => op.operationId)).not.toContain(operation.operationId);
    const bobTry = await bob.post(`/operations/${operation.operationId}/reconcile`);
    const noSuch = await bob.post('/operations/AAAAAAAAAAAAAAAAAAAAAA/reconcile');
    expect([bobTry.status, noSuch.status]).toEqual([404, 404]);
    expect(bobTry.body).toEqual(noSuch.body);

    // admin:read sees every owner's rows but may not act; alice without tasks:cancel may not either.
    const auditor = await signIn(TOKENS.auditor.token);
    expect((await auditor.get('/operations')).body.operations.find((op: any) => op.operationId === operation.operationId)).toMatchObject({
      mayReconcile: false,
    });
    expect((await auditor.post(`/operations/${operation.operationId}/reconcile`)).status).toBe(403);
    expect((await (await signIn(TOKENS.aliceReadOnly.token)).post(`/operations/${operation.operationId}/reconcile`)).status).toBe(403);
    // Without the CSRF token nothing runs.
    expect((await alice.post(`/operations/${operation.operationId}/reconcile`, {}, 'wrong')).status).toBe(403);
    expect(
      (await running.server.service.viewer.operations({ ownerKey: 'https://issuer.test|alice|acme', scopes: [] }, { limit: 50 })).find(
        (row) => row.operation.operationId === operation.operationId,
      )?.operation.status,
    ).toBe('unknown');

    // The owner reconciles: the system of record has no record yet → still unknown, with why.
    const first = await alice.post(`/operations/${operation.operationId}/reconcile`);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ verdict: 'unknown', detail: 'no record yet', operation: { status: 'unknown' } });

    // The bank's answer arrives late; reconcile again → confirmed with the receipt, gone from the unknown list.
    appendFileSync(ledger, `${operation.operationId} PAY-7\n`);
    const second = await alice.post(`/operations/${operation.operationId}/reconcile`);
    expect(second.body).toMatchObject({ verdict: 'confirmed', changed: true, operation: { status: 'confirmed', mayReconcile: false } });
    expect(JSON.parse(second.body.operation.receipt.text)).toEqual({ ref: 'PAY-7' });
    expect((await alice.get('/operations')).body.operations.map((op: any) => op.operationId)).not.toContain(operation.operationId);
    expect((await alice.get('/operations?status=confirmed')).body.operations.map((op: any) => op.operationId)).toContain(operation.operationId);

    const page = await alice.get(`/tasks/${taskId}`);
    expect(page.body.task.status).toBe('failed');
    expect(page.body.operations).toMatchObject([{ operationId: operation.operationId, status: 'confirmed' }]);
    expect((await alice.get('/operations?status=bogus')).status).toBe(400);
  });

  it('admin:write reconciles another owner’s operation', async () => {
    const taskId = await call(TOKENS.bob.token, 'pay');
    const admin = await signIn(TOKENS.admin.token);
    const listed = await until(
      () => admin.get('/operations'),
      (answer) => answer.body.operations.some((op: any) => op.taskId === taskId),
    );
    const operation = listed.body.operations.find((op: any) => op.taskId === taskId);
    expect(operation.mayReconcile).toBe(true);
    appendFileSync(ledger, `${operation.operationId} PAY-8\n`);
    expect((await admin.post(`/operations/${operation.operationId}/reconcile`)).body).toMatchObject({ verdict: 'confirmed' });
  });

  it("answering another owner's question needs tasks:answer AND admin:write (admin:read + tasks:answer is refused); the owner may", async () => {
    const taskId = await call(TOKENS.alice.token, 'ask');
    const alice = await signIn(TOKENS.alice.token);
    const waiting = await until(
      () => alice.get(`/tasks/${taskId}`),
      (answer) => answer.body.task?.status === 'input_required',
    );
    const key = waiting.body.questions[0].key as string;
    expect(waiting.body.permissions.answer).toBe(true);

    const answerer = await signIn(TOKENS.answerer.token);
    expect((await answerer.get(`/tasks/${taskId}`)).body.permissions.answer).toBe(false);
    const refused = await answerer.post(`/tasks/${taskId}/answer`, { responses: { [key]: { action: 'accept', content: { ok: true } } } });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toContain('admin:write');
    expect((await alice.get(`/tasks/${taskId}`)).body.task.status).toBe('input_required');

    const admin = await signIn(TOKENS.admin.token);
    expect((await admin.get(`/tasks/${taskId}`)).body.permissions.answer).toBe(true);
    expect((await admin.post(`/tasks/${taskId}/answer`, { responses: { [key]: { action: 'accept', content: { ok: true } } } })).status).toBe(200);
    await until(
      () => alice.get(`/tasks/${taskId}`),
      (answer) => answer.body.task.status === 'completed',
    );
  });

  it('the overview counts the last hour of the viewer’s own tasks by status and tool, with queue wait and run time per bucket', async () => {
    const bob = await signIn(TOKENS.bob.token);
    const alice = await signIn(TOKENS.alice.token);
    const overview = (await alice.get('/overview')).body;
    expect(overview.buckets).toHaveLength(12);
    // Twelve buckets on whole five minutes, the last holding now (issue 26 item 16): 55 to 60 minutes back.
    expect(overview.from % 300_000).toBe(0);
    expect(overview.to - overview.from).toBeGreaterThan(55 * 60_000);
    expect(overview.to - overview.from).toBeLessThanOrEqual(3_600_000);
    expect(overview.byTool.map((row: any) => row.tool).sort()).toEqual(['ask', 'pay']);
    expect(overview.byTool.find((row: any) => row.tool === 'pay').count).toBe(1);
    expect(overview.total).toBe(2);
    expect(overview.byStatus).toMatchObject({ failed: 1, completed: 1 });
    const last = overview.buckets.filter((bucket: any) => bucket.created > 0);
    expect(last.reduce((sum: number, bucket: any) => sum + bucket.created, 0)).toBe(2);
    expect(last.some((bucket: any) => bucket.queueWaitMaxMs !== null && bucket.queueWaitMaxMs >= 0)).toBe(true);
    expect(last.some((bucket: any) => bucket.runTimeMaxMs !== null && bucket.runTimeMaxMs >= 0)).toBe(true);
    // Bob's own pay task only: alice's never counted for him.
    expect((await bob.get('/overview')).body).toMatchObject({ total: 1, byTool: [{ tool: 'pay', count: 1 }] });
    // admin:read sees every owner's.
    expect((await (await signIn(TOKENS.auditor.token)).get('/overview')).body.total).toBe(3);
  });
});
