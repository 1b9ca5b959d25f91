/**
 * Issue 10 §1 "scope lost mid-task", end to end against a real authorization server (oidc-provider 9.13 on
 * loopback): a task started with a token that holds every scope asks for input; its answer and its reads are judged
 * on the scopes of the token of *that* request, both generations:
 * - a token without `tasks:answer` → HTTP 403 `insufficient_scope` (the SDK kit, at the method level);
 * - a token with `tasks:answer` but without the tool's own scope (`--tool-scope confirm_delete=logs:read`) → the
 *   unknown-task answer from the service door (v2 `tasks/update`, `tasks/get`), a v1 elicitation reply is dropped;
 * - another subject of the same tenant (identity changed) → the unknown-task answer;
 * in each case the task stays `input_required` with its question pending; with the full token it continues.
 * Negative control: on a server without the tool scope the very token that was refused for lacking `logs:read`
 * does answer and the task completes — so the refusal above is the re-check, not a broken answer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { JwtAuthenticator } from '../../src/auth/jwt.js';
import { ScopePolicy } from '../../src/core/scopes.js';
import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import { TestAuthorizationServer, type TestClient } from '../helpers/authorization-server.js';
import { NOT_FOUND } from '../helpers/official-clients.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { postModern, postRaw, readJsonRpc, TASKS_EXTENSION, type WireResponse } from '../helpers/wire.js';

const FULL = 'tasks:read tasks:cancel tasks:answer logs:read';
/** Everything but `tasks:answer`. */
const NO_ANSWER = 'tasks:read tasks:cancel logs:read';
/** Everything but the tool scope of confirm_delete. */
const NO_TOOL_SCOPE = 'tasks:read tasks:cancel tasks:answer';
const alice: TestClient = { clientId: 'alice', secret: 'alice-secret-0123456789abcdef0123456789', tenant: 'acme', scope: FULL };
const bob: TestClient = { clientId: 'bob', secret: 'bob-secret-0123456789abcdef0123456789ab', tenant: 'acme', scope: FULL };
const ELICITING = { elicitation: { form: {} }, extensions: { [TASKS_EXTENSION]: {} } };
const YES = { action: 'accept', content: { confirm: true } } as const;
const V1 = '2025-11-25';

/** A 2025-11-25 session opened with `token` (raw wire, so every later request can carry another token). */
async function openV1Session(url: string, token: string): Promise<string> {
  const init = await postRaw(
    url,
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: V1, capabilities: { elicitation: { form: {} } }, clientInfo: { name: 'scope-e2e', version: '1' } },
    }),
    { authorization: `Bearer ${token}` },
  );
  const sessionId = init.headers.get('mcp-session-id');
  if (init.status !== 200 || !sessionId) throw new Error(`initialize failed: ${init.status} ${JSON.stringify(init.body)}`);
  await postV1(url, sessionId, token, { jsonrpc: '2.0', method: 'notifications/initialized' });
  return sessionId;
}

let v1Id = 100;
async function postV1(url: string, sessionId: string, token: string, message: Record<string, unknown>): Promise<WireResponse> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': sessionId,
      'mcp-protocol-version': V1,
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify(message),
  });
  return readJsonRpc(response);
}
const v1Request = (url: string, sessionId: string, token: string, method: string, params: Record<string, unknown>) =>
  postV1(url, sessionId, token, { jsonrpc: '2.0', id: v1Id++, method, params });

/** The client's reply to our elicitation request for input `key` of a v1 task (R27–R31), posted with `token`. */
async function v1Reply(url: string, token: string, taskId: string, key: string, result: Record<string, unknown>): Promise<number> {
  const response = await postRaw(url, JSON.stringify({ jsonrpc: '2.0', id: `mcp-tasks-input/${taskId}/${key}`, result }), {
    authorization: `Bearer ${token}`,
    'mcp-protocol-version': V1,
  });
  return response.status;
}

/** How one generation creates, reads and answers a task, each with the token given. */
interface Generation {
  name: 'v1' | 'v2';
  /** Create a confirm_delete task; returns its id. */
  create(url: string, token: string): Promise<string>;
  /** The task as `token` reads it: its status, or the error. */
  read(url: string, token: string, taskId: string): Promise<{ status?: string; error?: unknown; http: number }>;
  /** Answer input `key` with `token`: the HTTP status and the JSON-RPC error, if any. */
  answer(url: string, token: string, taskId: string, key: string): Promise<{ http: number; error?: unknown }>;
  /** The final result text, read with `token` once the task is terminal. */
  resultText(url: string, token: string, taskId: string): Promise<string | undefined>;
}

function v2(): Generation {
  return {
    name: 'v2',
    async create(url, token) {
      const created = await postModern(
        url,
        'tools/call',
        { name: 'confirm_delete', arguments: { filename: 'report.txt' } },
        { token, capabilities: ELICITING },
      );
      if (created.body.result?.resultType !== 'task') throw new Error(`no task: ${JSON.stringify(created.body)}`);
      return String(created.body.result.taskId);
    },
    async read(url, token, taskId) {
      const response = await postModern(url, 'tasks/get', { taskId }, { token, capabilities: ELICITING });
      return { http: response.status, status: response.body.result?.status as string | undefined, error: response.body.error };
    },
    async answer(url, token, taskId, key) {
      const response = await postModern(url, 'tasks/update', { taskId, inputResponses: { [key]: YES } }, { token, capabilities: ELICITING });
      return { http: response.status, error: response.body.error };
    },
    async resultText(url, token, taskId) {
      const response = await postModern(url, 'tasks/get', { taskId }, { token, capabilities: ELICITING });
      return ((response.body.result?.result as { content?: Array<{ text?: string }> } | undefined)?.content ?? [])[0]?.text;
    },
  };
}

function v1(): Generation {
  const sessions = new Map<string, string>();
  const session = async (url: string, token: string) => {
    const key = `${url} ${token}`;
    if (!sessions.has(key)) sessions.set(key, await openV1Session(url, token));
    return sessions.get(key) as string;
  };
  return {
    name: 'v1',
    async create(url, token) {
      const created = await v1Request(url, await session(url, token), token, 'tools/call', {
        name: 'confirm_delete',
        arguments: { filename: 'report.txt' },
        task: { ttl: 60_000 },
      });
      const task = created.body.result?.task as { taskId?: string } | undefined;
      if (!task?.taskId) throw new Error(`no task: ${JSON.stringify(created.body)}`);
      return task.taskId;
    },
    async read(url, token, taskId) {
      const response = await v1Request(url, await session(url, token), token, 'tasks/get', { taskId });
      return { http: response.status, status: response.body.result?.status as string | undefined, error: response.body.error };
    },
    async answer(url, token, taskId, key) {
      return { http: await v1Reply(url, token, taskId, key, YES) };
    },
    async resultText(url, token, taskId) {
      const response = await v1Request(url, await session(url, token), token, 'tasks/result', { taskId });
      return ((response.body.result as { content?: Array<{ text?: string }> } | undefined)?.content ?? [])[0]?.text;
    },
  };
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('issue 10 §1: scope lost mid-task (oidc-provider tokens, both generations)', () => {
  let issuer: TestAuthorizationServer;
  /** confirm_delete needs logs:read (a tool scope). */
  let scoped: RunningTasksServer;
  /** The same server without any tool scope (negative control). */
  let unscoped: RunningTasksServer;

  const start = (scopes: ScopePolicy) =>
    startTasksServer({
      tools: conformanceFixtureTools(),
      auth: (url) => new JwtAuthenticator({ issuer: issuer.issuer, audience: url.href, jwksUrl: new URL(`${issuer.issuer}/jwks`) }),
      oauthIssuer: issuer.issuer,
      scopes,
      limits: { pollIntervalMs: 50 },
    });

  beforeAll(async () => {
    issuer = await TestAuthorizationServer.start({ clients: [alice, bob] });
    scoped = await start(new ScopePolicy(new Map([['confirm_delete', ['logs:read']]])));
    unscoped = await start(new ScopePolicy());
  });
  afterAll(async () => {
    await scoped?.close();
    await unscoped?.close();
    await issuer?.close();
  });

  for (const generation of [v2(), v1()]) {
    it(`${generation.name}: without tasks:answer → 403, without the tool scope or as another subject → unknown task; the task stays input_required; with the scope it continues`, async () => {
      const url = scoped.url;
      const full = await issuer.token(alice, { resource: url, scope: FULL });
      const noAnswer = await issuer.token(alice, { resource: url, scope: NO_ANSWER });
      const noToolScope = await issuer.token(alice, { resource: url, scope: NO_TOOL_SCOPE });
      const otherSubject = await issuer.token(bob, { resource: url, scope: FULL });

      const taskId = await generation.create(url, full);
      await until(
        () => generation.read(url, full, taskId),
        (task) => task.status === 'input_required',
        `task ${taskId} input_required`,
      );
      const stillWaiting = async (what: string) => {
        expect((await generation.read(url, full, taskId)).status, what).toBe('input_required');
        expect(
          (await scoped.store.listInputRequests(taskId)).map((request) => request.state),
          what,
        ).toEqual(['pending']);
      };

      // 1. The scope tasks:answer is gone: the SDK kit refuses the call itself.
      const refused = await generation.answer(url, noAnswer, taskId, 'input-1');
      expect(refused.http).toBe(403);
      await stillWaiting('after the answer without tasks:answer');

      // 2. tasks:answer kept, the tool's own scope gone: the service door answers as for an unknown task.
      const stale = await generation.answer(url, noToolScope, taskId, 'input-1');
      if (generation.name === 'v2') expect(stale).toEqual({ http: 200, error: NOT_FOUND });
      else expect(stale.http).toBe(202); // a reply is accepted as a message and dropped: nothing to learn from it
      await stillWaiting('after the answer without the tool scope');
      // Reading it on that token is refused the same way (its result carries the tool's authority too).
      expect(await generation.read(url, noToolScope, taskId)).toMatchObject({ http: 200, error: NOT_FOUND });

      // 3. Identity changed (another subject of the same tenant, every scope).
      const foreign = await generation.answer(url, otherSubject, taskId, 'input-1');
      if (generation.name === 'v2') expect(foreign).toEqual({ http: 200, error: NOT_FOUND });
      else expect(foreign.http).toBe(202);
      await stillWaiting('after the answer of another subject');

      // 4. With the scopes the task continues and completes with the answer.
      const accepted = await generation.answer(url, full, taskId, 'input-1');
      expect(accepted.http).toBe(generation.name === 'v2' ? 200 : 202);
      expect(accepted.error).toBeUndefined();
      await until(
        () => generation.read(url, full, taskId),
        (task) => task.status === 'completed',
        `task ${taskId} completed`,
      );
      expect(await generation.resultText(url, full, taskId)).toBe('Deleted report.txt');
      // The result stays out of reach of the token without the tool scope.
      expect(await generation.read(url, noToolScope, taskId)).toMatchObject({ error: NOT_FOUND });
    });

    it(`${generation.name} negative control: without --tool-scope the token lacking logs:read answers and the task completes`, async () => {
      const url = unscoped.url;
      const full = await issuer.token(alice, { resource: url, scope: FULL });
      const noToolScope = await issuer.token(alice, { resource: url, scope: NO_TOOL_SCOPE });
      const taskId = await generation.create(url, full);
      await until(
        () => generation.read(url, full, taskId),
        (task) => task.status === 'input_required',
        `task ${taskId} input_required`,
      );
      const answered = await generation.answer(url, noToolScope, taskId, 'input-1');
      expect(answered.error).toBeUndefined();
      await until(
        () => generation.read(url, noToolScope, taskId),
        (task) => task.status === 'completed',
        `task ${taskId} completed`,
      );
      expect(await generation.resultText(url, noToolScope, taskId)).toBe('Deleted report.txt');
    });
  }
});
