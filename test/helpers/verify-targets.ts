/**
 * Targets for proving that `mcp-tasks verify` discriminates: our fixture server (the `--fixtures verify` tools, two
 * bearer tokens) and deliberately broken variants of it, built here and never a flag of the shipped server.
 *
 * Each broken variant seeds one defect a real server could have:
 * - `identity-by-tenant`: the authenticator keys owners by tenant only, so two users of one tenant share tasks
 *   (a foreign task leaks) — built with the server's public `auth` option;
 * - the others sit in an HTTP front that rewrites the fixture server's answers on the wire (so they rely on nothing
 *   but its wire behaviour): `terminal-regresses` (a completed task reads `working` again from its third terminal
 *   read on, as a recovery that re-runs finished work would show), `cancel-terminal-accepted` (v1 `tasks/cancel` of
 *   a terminal task answered with a `cancelled` task instead of `-32602`), `missing-32021` (a task-only tool called
 *   without the extension answered with an inline error result instead of `-32021`), `status-echo` (the tool's
 *   arguments echoed raw into `statusMessage`, control characters and secrets included), `status-c0c1-only` (the
 *   arguments echoed into `statusMessage` through the sanitiser this server had before issue 23 §3: secrets
 *   redacted, C0/C1 controls removed, 512 characters — bidi controls, U+2028 and role markers kept),
 *   `status-latin-markers-only` (this server's rule, but a role marker spelt with Cyrillic look-alikes left as it came),
 *   `foreign-distinguishable`
 *   (another principal's task answered "access denied" instead of exactly like an unknown id: its existence leaks).
 */
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import { TokenFileAuthenticator } from '../../src/auth/token-file.js';
import type { TasksServerLimits } from '../../src/core/limits.js';
import type { Authenticator } from '../../src/core/owner.js';
import { redactSecrets } from '../../src/core/redaction.js';
import { verifyFixtureTools } from '../../src/tools/fixtures/verify.js';
import { readBody } from './fault-proxy.js';
import { type RunningTasksServer, startTasksServer } from './tasks-server.js';

/** Two principals of one tenant. */
export const TOKENS = Object.freeze({ a: 'verify-token-alice-0123456789', b: 'verify-token-bob-0123456789ab' });

/** Write a `--auth tokens:<file>` file for {@link TOKENS}; returns its path. */
export function writeTokenFile(dir: string): string {
  const path = join(dir, 'tokens.json');
  writeFileSync(
    path,
    JSON.stringify({
      tokens: [
        { token: TOKENS.a, issuer: 'verify-test', subject: 'alice', tenant: 'acme' },
        { token: TOKENS.b, issuer: 'verify-test', subject: 'bob', tenant: 'acme' },
      ],
    }),
  );
  return path;
}

/** Limits that keep a verify run short: fast poll hint, a short retention (so 2026-07-28 expiry can be seen). */
export const FAST_LIMITS: Partial<TasksServerLimits> = {
  pollIntervalMs: 100,
  defaultTtlMs: 8000,
  concurrency: 8,
  runtimeLimitMs: 8000,
  minResultRetentionMs: 0,
};

/** Our fixture server in this process with the `--fixtures verify` tools and the given authenticator. */
export function startFixtureServer(auth: Authenticator, limits: Partial<TasksServerLimits> = FAST_LIMITS): Promise<RunningTasksServer> {
  return startTasksServer({ tools: verifyFixtureTools(), auth, limits });
}

/** Defect `identity-by-tenant`: every token of a tenant authenticates as the same owner. */
export function identityByTenant(tokenFile: string): Authenticator {
  const real = TokenFileAuthenticator.fromFile(tokenFile);
  return {
    async verify(token) {
      const principal = await real.verify(token);
      return { ...principal, subject: principal.tenant };
    },
  };
}

/** The Cyrillic-spelt role marker `verify` plants (Ѕ Y Ѕ Т Е М), as it comes and as this server quotes it. */
const LOOK_ALIKE_MARKER = '\u0405Y\u0405\u0422\u0415\u041c:';
const LOOK_ALIKE_QUOTED = '‹\u0405Y\u0405\u0422\u0415\u041c›';

/** The defects seeded on the wire (`none`: the front only relays, for negative controls). */
export type WireDefect =
  | 'terminal-regresses'
  | 'cancel-terminal-accepted'
  | 'missing-32021'
  | 'status-echo'
  | 'status-c0c1-only'
  | 'status-latin-markers-only'
  | 'foreign-distinguishable'
  | 'none';

interface Rpc {
  id?: unknown;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

/** Per-front memory of what went by. */
interface FrontState {
  /** Terminal reads seen per task. */
  terminalReads: Map<string, number>;
  /** Task ids the server created (from CreateTaskResults). */
  created: Set<string>;
  /** The first string argument of the call that created each task. */
  labels: Map<string, string>;
}

function createdId(result: Record<string, unknown> | undefined): string | undefined {
  const id = (result?.task as { taskId?: unknown } | undefined)?.taskId ?? (result?.resultType === 'task' ? result.taskId : undefined);
  return typeof id === 'string' ? id : undefined;
}

function firstString(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') for (const item of Object.values(value)) if (typeof item === 'string') return item;
  return undefined;
}

/** The rewrite of one answer: the message (changed or not) and, optionally, another HTTP status. */
type Rewrite = (request: Rpc, answer: Rpc, state: FrontState, v1: boolean) => { answer: Rpc; status?: number } | undefined;

const REWRITES: Record<WireDefect, Rewrite> = {
  'terminal-regresses': (request, answer, state) => {
    if (request.method !== 'tasks/get' || answer.result?.status !== 'completed') return undefined;
    const id = String(answer.result.taskId);
    const reads = (state.terminalReads.get(id) ?? 0) + 1;
    state.terminalReads.set(id, reads);
    if (reads <= 2) return undefined;
    const { result: _inline, ...rest } = answer.result;
    return { answer: { ...answer, result: { ...rest, status: 'working' } } };
  },
  'cancel-terminal-accepted': (request, answer, state, v1) => {
    const id = request.params?.taskId;
    if (!v1 || request.method !== 'tasks/cancel' || answer.error?.code !== -32602 || typeof id !== 'string' || !state.created.has(id)) return undefined;
    const now = new Date().toISOString();
    return { answer: { jsonrpc: '2.0', id: answer.id, result: { taskId: id, status: 'cancelled', createdAt: now, lastUpdatedAt: now, ttl: 60_000 } } as Rpc };
  },
  'missing-32021': (request, answer) => {
    if (request.method !== 'tools/call' || answer.error?.code !== -32021) return undefined;
    return {
      answer: {
        jsonrpc: '2.0',
        id: answer.id,
        result: { resultType: 'complete', content: [{ type: 'text', text: 'This tool runs only as a task.' }], isError: true },
      } as Rpc,
      status: 200,
    };
  },
  'foreign-distinguishable': (request, answer, state) => {
    const id = request.params?.taskId;
    if (
      !['tasks/get', 'tasks/cancel', 'tasks/result'].includes(String(request.method)) ||
      answer.error?.code !== -32602 ||
      typeof id !== 'string' ||
      !state.created.has(id)
    )
      return undefined;
    return { answer: { ...answer, error: { code: -32602, message: 'Access denied: the task belongs to another principal' } } };
  },
  none: () => undefined,
  'status-echo': (request, answer, state) => {
    if (request.method !== 'tasks/get' || !answer.result) return undefined;
    const label = state.labels.get(String(answer.result.taskId));
    return label === undefined ? undefined : { answer: { ...answer, result: { ...answer.result, statusMessage: `working on ${label}` } } };
  },
  'status-c0c1-only': (request, answer, state) => {
    if (request.method !== 'tasks/get' || !answer.result) return undefined;
    const label = state.labels.get(String(answer.result.taskId));
    if (label === undefined) return undefined;
    const old = `working on ${redactSecrets(label)}`
      // eslint-disable-next-line no-control-regex -- the old sanitiser removed exactly these
      .replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ')
      .replace(/ {2,}/g, ' ')
      .slice(0, 511);
    return { answer: { ...answer, result: { ...answer.result, statusMessage: old } } };
  },
  'status-latin-markers-only': (request, answer) => {
    // The rule as this server applied it before look-alike letters were matched: a role marker spelt with Cyrillic
    // letters (`ЅYЅТЕМ:`) was left as it came.
    const status = answer.result?.statusMessage;
    if (request.method !== 'tasks/get' || typeof status !== 'string' || !status.includes(LOOK_ALIKE_QUOTED)) return undefined;
    return { answer: { ...answer, result: { ...answer.result, statusMessage: status.replace(LOOK_ALIKE_QUOTED, LOOK_ALIKE_MARKER) } } };
  },
};

function parse(text: string): Rpc | undefined {
  try {
    return JSON.parse(text) as Rpc;
  } catch {
    return undefined;
  }
}

/** A front that seeds `defect` into the answers of the server at `targetUrl`. */
export async function startDefectFront(targetUrl: string, defect: WireDefect): Promise<{ url: string; rewrites(): number; close(): Promise<void> }> {
  const state: FrontState = { terminalReads: new Map(), created: new Set(), labels: new Map() };
  let rewrites = 0;
  const server: Server = createServer((request, response) => {
    void (async () => {
      const body = await readBody(request);
      const rpc = parse(body.toString('utf8'));
      const headers = new Headers();
      for (const [name, value] of Object.entries(request.headers))
        if (typeof value === 'string' && !['host', 'content-length', 'connection'].includes(name)) headers.set(name, value);
      const upstream = await fetch(new URL(request.url ?? '/', targetUrl), { method: request.method ?? 'POST', headers, ...(body.length > 0 ? { body } : {}) });
      const type = upstream.headers.get('content-type') ?? '';
      const passthrough = Object.fromEntries(
        [...upstream.headers].filter(([name]) => !['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(name)),
      );
      if (!rpc?.method || rpc.method === 'tasks/result' || !upstream.body) {
        // Streams that may carry server→client requests pass through untouched, as they arrive.
        response.writeHead(upstream.status, passthrough);
        if (upstream.body) for await (const chunk of upstream.body) response.write(chunk);
        return void response.end();
      }
      const text = await upstream.text();
      const v1 = typeof request.headers['mcp-session-id'] === 'string';
      let status = upstream.status;
      const fix = (answer: Rpc): Rpc => {
        if (answer.id === undefined || answer.id !== rpc.id) return answer;
        const id = createdId(answer.result);
        if (id) {
          state.created.add(id);
          const label = firstString((rpc.params?.arguments as Record<string, unknown> | undefined)?.label);
          if (label !== undefined) state.labels.set(id, label);
        }
        const changed = REWRITES[defect](rpc, answer, state, v1);
        if (!changed) return answer;
        rewrites += 1;
        if (changed.status !== undefined) status = changed.status;
        return changed.answer;
      };
      let out: string;
      if (type.includes('text/event-stream')) {
        out = text.replaceAll(/^data: (.*)$/gm, (line, json: string) => {
          const message = parse(json);
          return message ? `data: ${JSON.stringify(fix(message))}` : line;
        });
      } else {
        const message = parse(text);
        out = message ? JSON.stringify(fix(message)) : text;
      }
      response.writeHead(status, passthrough);
      response.end(out);
    })().catch(() => response.socket?.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${new URL(targetUrl).pathname}`,
    rewrites: () => rewrites,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
