/**
 * Owner isolation (acceptance 4) with the real official clients over HTTP, once with token-file identities and once
 * with JWT access tokens of two subjects of one tenant issued by a real authorization server (oidc-provider, issue
 * 10 §1): tasks are bound to the authenticated principal (R48, E45). Another principal's task must look exactly like an id that never existed (R49, D6, C-SEC-02),
 * its cancel/update must not touch it (C-SEC-03), `tasks/list` must not show it (C-SEC-04), requests without valid
 * credentials stop at HTTP 401 before any task lookup (C-SEC-10), and the two task generations never see each other.
 */
import { randomUUID } from 'node:crypto';

import { resultFromTaskOutcome, type TaskEnabledSession } from '@modelcontextprotocol/ext-tasks/client';
import { taskId as toTaskId } from '@modelcontextprotocol/ext-tasks/core';
import type { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema, ListTasksResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { JwtAuthenticator } from '../../src/auth/jwt.js';
import { TokenFileAuthenticator } from '../../src/auth/token-file.js';
import { ownerKeyOf } from '../../src/core/owner.js';
import type { AnyToolDefinition } from '../../src/core/tool.js';
import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import { TestAuthorizationServer } from '../helpers/authorization-server.js';
import {
  connectV1Http,
  connectV2Http,
  createV2TaskSession,
  gatedTools,
  Gates,
  httpRawDispatch,
  HttpRecorder,
  NOT_FOUND,
  pollUntil,
  RANDOM_ID,
  rejection,
  type V1HttpClient,
  type V2HttpClient,
} from '../helpers/official-clients.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { postModern, postRaw } from '../helpers/wire.js';

const ISSUER = 'https://issuer.e2e.test';
const WRONG_TOKEN = 'not-a-known-token-0123456789';
const LIMITS = { listPageSize: 2, pollIntervalMs: 50 };

/** A server with two principals of one tenant, alice (A) and bob (B), and their bearer tokens. */
interface Identities {
  running: RunningTasksServer;
  tokenA: string;
  tokenB: string;
  /** Owner keys of A and B as the server derives them. */
  owners: string[];
  close(): Promise<void>;
}

/** Static tokens from a token file. */
async function tokenFileIdentities(tools: AnyToolDefinition[]): Promise<Identities> {
  const [tokenA, tokenB] = ['owner-a-token-0123456789abcdef', 'owner-b-token-0123456789abcdef'];
  const auth = new TokenFileAuthenticator({
    tokens: [
      { token: tokenA, issuer: ISSUER, subject: 'alice', tenant: 'acme' },
      { token: tokenB, issuer: ISSUER, subject: 'bob', tenant: 'acme' },
    ],
  });
  const running = await startTasksServer({ tools, auth, limits: LIMITS });
  return { running, tokenA, tokenB, owners: [`${ISSUER}|alice|acme`, `${ISSUER}|bob|acme`], close: () => running.close() };
}

/** Client-credentials JWTs of two clients of the tenant `acme`, issued by oidc-provider for this server. */
async function jwtIdentities(tools: AnyToolDefinition[]): Promise<Identities> {
  const scope = 'tasks:read tasks:cancel tasks:answer';
  const alice = { clientId: 'alice', secret: 'alice-secret-0123456789abcdef0123456789', tenant: 'acme', scope };
  const bob = { clientId: 'bob', secret: 'bob-secret-0123456789abcdef0123456789ab', tenant: 'acme', scope };
  const issuer = await TestAuthorizationServer.start({ clients: [alice, bob] });
  const running = await startTasksServer({
    tools,
    auth: (url) => new JwtAuthenticator({ issuer: issuer.issuer, audience: url.href, jwksUrl: new URL(`${issuer.issuer}/jwks`) }),
    oauthIssuer: issuer.issuer,
    limits: LIMITS,
  });
  return {
    running,
    tokenA: await issuer.token(alice, { resource: running.url, scope }),
    tokenB: await issuer.token(bob, { resource: running.url, scope }),
    owners: ['alice', 'bob'].map((subject) => ownerKeyOf({ issuer: issuer.issuer, subject, tenant: 'acme' })),
    async close() {
      await running.close();
      await issuer.close();
    },
  };
}

async function createV1Task(client: V1Client, name: string, args: Record<string, unknown>): Promise<string> {
  return (await client.request({ method: 'tools/call', params: { name, arguments: args } }, CreateTaskResultSchema, { task: {} })).task.taskId;
}

async function v1Status(client: V1Client, taskId: string): Promise<string> {
  return (await client.experimental.tasks.getTask(taskId)).status;
}

/** The raw JSON-RPC error of the last `method` exchange (to compare foreign and unknown answers byte for byte). */
async function lastError(http: HttpRecorder, method: string): Promise<{ status: number | undefined; error: unknown }> {
  return { status: http.lastStatus(method), error: (await http.lastResponse(method)).error };
}

describe.each([
  { identity: 'token file', start: tokenFileIdentities },
  { identity: 'JWT access tokens of oidc-provider, two subjects of one tenant', start: jwtIdentities },
])('owner isolation with authentication (two principals A and B: $identity)', ({ start }) => {
  const gates = new Gates();
  let identities: Identities;
  let running: RunningTasksServer;
  let TOKEN_A: string;
  let TOKEN_B: string;
  let v1A: V1HttpClient;
  let v1B: V1HttpClient;
  let v2A: V2HttpClient;
  let v2B: V2HttpClient;
  let sessionA: TaskEnabledSession;
  let sessionB: TaskEnabledSession;

  beforeAll(async () => {
    identities = await start([...conformanceFixtureTools(), ...gatedTools(gates)]);
    ({ running, tokenA: TOKEN_A, tokenB: TOKEN_B } = identities);
    v1A = await connectV1Http(running.url, { token: TOKEN_A, name: 'alice' });
    v1B = await connectV1Http(running.url, { token: TOKEN_B, name: 'bob' });
    v2A = await connectV2Http(running.url, { token: TOKEN_A });
    v2B = await connectV2Http(running.url, { token: TOKEN_B });
    sessionA = createV2TaskSession(v2A.client, httpRawDispatch(running.url, v2A.http), 'isolation-a');
    sessionB = createV2TaskSession(v2B.client, httpRawDispatch(running.url, v2B.http), 'isolation-b');
  });
  afterAll(async () => {
    await sessionA?.close();
    await sessionB?.close();
    for (const client of [v1A, v1B, v2A, v2B]) await client?.close();
    await identities?.close();
  });

  it("R49/D6/C-SEC-02 v1: B's tasks/get, tasks/result and tasks/cancel on A's task answer exactly like an unknown id", async () => {
    const gate = randomUUID();
    const working = await createV1Task(v1A.client, 'gated', { gate });
    const completed = await createV1Task(v1A.client, 'slow_compute', { seconds: 0 });
    await pollUntil(
      () => v1Status(v1A.client, completed),
      (status) => status === 'completed',
    );
    const calls = {
      'tasks/get': (id: string) => v1B.client.experimental.tasks.getTask(id),
      'tasks/result': (id: string) => v1B.client.experimental.tasks.getTaskResult(id, CallToolResultSchema),
      'tasks/cancel': (id: string) => v1B.client.experimental.tasks.cancelTask(id),
    };
    for (const [method, call] of Object.entries(calls)) {
      const unknown = await rejection(call(RANDOM_ID));
      const unknownWire = await lastError(v1B.http, method);
      expect(unknown, method).toEqual(NOT_FOUND);
      for (const foreign of [working, completed]) {
        expect(await rejection(call(foreign)), method).toEqual(unknown);
        expect(await lastError(v1B.http, method), method).toEqual(unknownWire);
      }
    }
    expect(await v1Status(v1A.client, working)).toBe('working');
    gates.open(gate);
  });

  it("R49/C-SEC-03 v1: B's tasks/cancel leaves A's task untouched and it still completes", async () => {
    const gate = randomUUID();
    const taskId = await createV1Task(v1A.client, 'gated', { gate });
    await gates.started(gate);
    expect(await rejection(v1B.client.experimental.tasks.cancelTask(taskId))).toEqual(NOT_FOUND);
    expect(await v1Status(v1A.client, taskId)).toBe('working');
    gates.open(gate);
    const result = await v1A.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: `released ${gate}` }]);
    expect(await v1Status(v1A.client, taskId)).toBe('completed');
  });

  it("E45/C-SEC-02 v2: B's tasks/get, tasks/update and tasks/cancel on A's task answer exactly like an unknown id", async () => {
    const gate = randomUUID();
    const execution = await sessionA.callTool('gated', { gate });
    if (execution.kind !== 'task') expect.fail('expected a task');
    const foreign = sessionB.task(execution.handle.taskId);
    const unknown = sessionB.task(toTaskId(RANDOM_ID));
    const operations = {
      'tasks/get': (controller: typeof foreign) => controller.snapshot(),
      'tasks/update': (controller: typeof foreign) => controller.update({}),
      'tasks/cancel': (controller: typeof foreign) => controller.cancel(),
    };
    for (const [method, operation] of Object.entries(operations)) {
      const expected = await rejection(operation(unknown));
      const expectedWire = await lastError(v2B.http, method);
      expect(expected, method).toEqual(NOT_FOUND);
      expect(await rejection(operation(foreign)), method).toEqual(expected);
      expect(await lastError(v2B.http, method), method).toEqual(expectedWire);
    }
    expect((await sessionA.task(execution.handle.taskId).snapshot()).status).toBe('working');
    gates.open(gate);
    expect((await execution.settle()).outcome.status).toBe('completed');
  });

  it("E45/C-SEC-03 v2: B's tasks/cancel and tasks/update leave A's task untouched and it still completes", async () => {
    const gate = randomUUID();
    const execution = await sessionA.callTool('gated', { gate });
    if (execution.kind !== 'task') expect.fail('expected a task');
    await gates.started(gate);
    const foreign = sessionB.task(execution.handle.taskId);
    expect(await rejection(foreign.cancel())).toEqual(NOT_FOUND);
    expect(await rejection(foreign.update({ anything: { action: 'accept', content: {} } }))).toEqual(NOT_FOUND);
    expect((await sessionA.task(execution.handle.taskId).snapshot()).status).toBe('working');
    gates.open(gate);
    const { outcome } = await execution.settle();
    expect(resultFromTaskOutcome(outcome)).toMatchObject({ content: [{ type: 'text', text: `released ${gate}` }] });
  });

  it("R49/C-SEC-04 v1: B's tasks/list shows none of A's tasks, and A's cursor is invalid for B", async () => {
    const own = await createV1Task(v1B.client, 'slow_compute', { seconds: 0 });
    const aTasks: string[] = [];
    for (let i = 0; i < 3; i += 1) aTasks.push(await createV1Task(v1A.client, 'slow_compute', { seconds: 0 }));

    const listAll = async (client: V1Client): Promise<string[]> => {
      const ids: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.experimental.tasks.listTasks(cursor);
        ids.push(...page.tasks.map((task) => task.taskId));
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      return ids;
    };
    const seenByB = await listAll(v1B.client);
    expect(seenByB).toContain(own);
    for (const taskId of aTasks) expect(seenByB).not.toContain(taskId);
    const seenByA = await listAll(v1A.client);
    expect(seenByA).toEqual(expect.arrayContaining(aTasks));
    expect(seenByA).not.toContain(own);

    const cursorOfA = (await v1A.client.experimental.tasks.listTasks()).nextCursor;
    expect(cursorOfA).toBeDefined();
    expect(await rejection(v1B.client.request({ method: 'tasks/list', params: { cursor: String(cursorOfA) } }, ListTasksResultSchema))).toEqual({
      code: -32602,
      message: 'Invalid cursor',
    });
  });

  it('R48/E45 a v1 task is invisible through v2 and a v2 task through v1, for the same owner (unknown-id answer)', async () => {
    const gate1 = randomUUID();
    const v1Task = await createV1Task(v1A.client, 'gated', { gate: gate1 });
    const asV2 = sessionA.task(toTaskId(v1Task));
    expect(await rejection(asV2.snapshot())).toEqual(NOT_FOUND);
    expect(await rejection(asV2.cancel())).toEqual(NOT_FOUND);
    expect(await rejection(asV2.update({}))).toEqual(NOT_FOUND);
    expect(await v1Status(v1A.client, v1Task)).toBe('working');

    const gate2 = randomUUID();
    const execution = await sessionA.callTool('gated', { gate: gate2 });
    if (execution.kind !== 'task') expect.fail('expected a task');
    const v2Task = execution.handle.taskId;
    expect(await rejection(v1A.client.experimental.tasks.getTask(v2Task))).toEqual(NOT_FOUND);
    expect(await rejection(v1A.client.experimental.tasks.cancelTask(v2Task))).toEqual(NOT_FOUND);
    expect((await sessionA.task(v2Task).snapshot()).status).toBe('working');
    gates.open(gate2);
    expect((await execution.settle()).outcome.status).toBe('completed');
    expect(await rejection(v1A.client.experimental.tasks.getTaskResult(v2Task, CallToolResultSchema))).toEqual(NOT_FOUND);
    const listedByA: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await v1A.client.experimental.tasks.listTasks(cursor);
      listedByA.push(...page.tasks.map((task) => task.taskId));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(listedByA).toContain(v1Task);
    expect(listedByA).not.toContain(v2Task);
    gates.open(gate1);
  });

  it('C-SEC-10 without a token or with a wrong token the official clients get HTTP 401 at connect', async () => {
    for (const token of [undefined, WRONG_TOKEN]) {
      const options = token === undefined ? {} : { token };
      const v1Http = new HttpRecorder(options);
      await expect(connectV1Http(running.url, { http: v1Http })).rejects.toThrow();
      expect(v1Http.lastStatus('initialize')).toBe(401);
      const v2Http = new HttpRecorder(options);
      await expect(connectV2Http(running.url, { http: v2Http, mode: 'auto' })).rejects.toThrow();
      expect(v2Http.exchanges.length).toBeGreaterThan(0);
      expect(v2Http.exchanges.every((exchange) => exchange.status === 401)).toBe(true);
    }
    // Any non-bearer or unknown credential is refused the same way, with a Bearer challenge.
    for (const headers of [{}, { authorization: `Bearer ${WRONG_TOKEN}` }, { authorization: 'Basic Zm9vOmJhcg==' }] as Array<Record<string, string>>) {
      const initialize = await postRaw(
        running.url,
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
        }),
        headers,
      );
      expect(initialize.status).toBe(401);
      expect(initialize.headers.get('www-authenticate')).toMatch(/^Bearer /);
    }
  });

  it('C-SEC-10 unauthenticated task requests get HTTP 401 and never reach task lookup, on both generations', async () => {
    const gate = randomUUID();
    const v2Execution = await sessionA.callTool('gated', { gate });
    if (v2Execution.kind !== 'task') expect.fail('expected a task');
    const v2Task: string = v2Execution.handle.taskId;
    const v1Task = await createV1Task(v1A.client, 'gated', { gate });

    // Only lookups made without an authenticated owner count: other clients of this suite (e.g. ext-tasks polling in
    // the background) look tasks up as alice or bob meanwhile, and those prove nothing either way.
    const authenticatedOwners = new Set(identities.owners);
    const lookups: string[] = [];
    const authenticatedLookups: string[] = [];
    const store = running.store;
    // Both scoped reads of the store: `get`, and `getWithOutcome` (what the service's task reads use).
    const realGet = store.get;
    const realGetWithOutcome = store.getWithOutcome;
    store.get = (taskId, scope) => {
      (authenticatedOwners.has(scope.ownerKey) ? authenticatedLookups : lookups).push(taskId);
      return realGet.call(store, taskId, scope);
    };
    store.getWithOutcome = (taskId, scope, maxOutcomeChars) => {
      (authenticatedOwners.has(scope.ownerKey) ? authenticatedLookups : lookups).push(taskId);
      return realGetWithOutcome.call(store, taskId, scope, maxOutcomeChars);
    };
    try {
      for (const headers of [{}, { authorization: `Bearer ${WRONG_TOKEN}` }] as Array<Record<string, string>>) {
        for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
          const response = await postModern(running.url, method, { taskId: v2Task, inputResponses: {} }, { headers });
          expect(response.status, method).toBe(401);
          expect(response.body).not.toHaveProperty('result');
        }
        // A's live legacy session id does not help without A's credentials.
        for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
          const response = await postRaw(running.url, JSON.stringify({ jsonrpc: '2.0', id: 7, method, params: { taskId: v1Task } }), {
            ...headers,
            'mcp-session-id': String(v1A.transport.sessionId),
            'mcp-protocol-version': '2025-11-25',
          });
          expect(response.status, method).toBe(401);
          expect(response.body).not.toHaveProperty('result');
        }
      }
      expect(lookups).toEqual([]);
      // Sanity check of the probe: an authenticated request does reach the lookup.
      await sessionA.task(v2Execution.handle.taskId).snapshot();
      expect(authenticatedLookups).toContain(v2Task);
    } finally {
      store.get = realGet;
      store.getWithOutcome = realGetWithOutcome;
    }
    // B presenting A's legacy session id is refused as an unknown session (the session is bound to its owner).
    const hijack = await postRaw(running.url, JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tasks/get', params: { taskId: v1Task } }), {
      authorization: `Bearer ${TOKEN_B}`,
      'mcp-session-id': String(v1A.transport.sessionId),
      'mcp-protocol-version': '2025-11-25',
    });
    expect(hijack.status).toBe(404);
    expect(hijack.body).not.toHaveProperty('result');
    gates.open(gate);
    expect((await v2Execution.settle()).outcome.status).toBe('completed');
    expect(
      await pollUntil(
        () => v1Status(v1A.client, v1Task),
        (status) => status === 'completed',
      ),
    ).toBe('completed');
  });
});
