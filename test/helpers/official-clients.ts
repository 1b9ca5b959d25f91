/**
 * Shared setup for end-to-end tests that drive the server with the REAL official clients:
 * - `@modelcontextprotocol/sdk@1.32.2` (`Client`, 2025-11-25 tasks) over Streamable HTTP or stdio;
 * - `@modelcontextprotocol/client@2.4.0` (2026-07-28) plus `@modelcontextprotocol/ext-tasks@0.2.2` sessions.
 *
 * HTTP traffic goes through a recording `fetch` so tests can assert the HTTP status of every JSON-RPC exchange the
 * clients make (the clients themselves only surface JSON-RPC errors).
 */
import { Client as V2Client, ProtocolError, type Transport } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport as V2HttpTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, JsonRpcResponseError, type RawClientDispatch, type TaskEnabledSession } from '@modelcontextprotocol/ext-tasks/client';
import type { JsonValue } from '@modelcontextprotocol/ext-tasks/core';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type ClientCapabilities, McpError } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'vitest';
import { z } from 'zod';

import { type AnyToolDefinition, defineTool, textResult } from '../../src/core/tool.js';
import { readJsonRpc, TASKS_EXTENSION } from './wire.js';

/** `_meta` key of the 2025-11-25 related-task metadata (R26, R31). */
export const RELATED_TASK = 'io.modelcontextprotocol/related-task';
/** The answer to an unknown (or foreign, expired, other-generation) task id (R45, E39, D6). */
export const NOT_FOUND = { code: -32602, message: 'Failed to retrieve task: Task not found' } as const;
/** A syntactically plausible id that no server ever minted. */
export const RANDOM_ID = 'Zz9Yy8Xx7Ww6Vv5Uu4Tt3S';

/** One HTTP exchange made by a client, with the JSON-RPC method(s) of its body. */
export interface HttpExchange {
  httpMethod: string;
  /** JSON-RPC methods in the request body (`response` for client→server responses). */
  rpcMethods: string[];
  /** The parsed request body as sent. */
  requestBody: unknown;
  status: number;
  requestHeaders: Headers;
  /** The JSON-RPC messages of the response body (POST only; resolves when the body ends). */
  messages: Promise<unknown[]>;
}

/** Options of {@link recordingFetch}. */
export interface RecordingFetchOptions {
  /** Bearer token added to every request. */
  token?: string;
  /** Rewrite `initialize.params.protocolVersion` (forces an older legacy session with an unmodified client). */
  initializeProtocolVersion?: string;
}

/** A `fetch` that records every exchange (HTTP status per JSON-RPC method) and can add a bearer token. */
export class HttpRecorder {
  readonly exchanges: HttpExchange[] = [];

  constructor(private readonly options: RecordingFetchOptions = {}) {}

  readonly fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const headers = new Headers(init?.headers);
    if (this.options.token !== undefined) headers.set('authorization', `Bearer ${this.options.token}`);
    let body = init?.body;
    let rpcMethods: string[] = [];
    let requestBody: unknown;
    if (typeof body === 'string') {
      try {
        const parsed = JSON.parse(body) as unknown;
        requestBody = parsed;
        const messages = (Array.isArray(parsed) ? parsed : [parsed]) as Array<Record<string, unknown>>;
        rpcMethods = messages.map((message) => (typeof message.method === 'string' ? message.method : 'response'));
        const first = messages[0];
        if (this.options.initializeProtocolVersion && first?.method === 'initialize' && typeof first.params === 'object' && first.params !== null) {
          (first.params as Record<string, unknown>).protocolVersion = this.options.initializeProtocolVersion;
          body = JSON.stringify(parsed);
        }
      } catch {
        rpcMethods = [];
      }
    }
    const response = await fetch(input, { ...init, headers, ...(body === undefined ? {} : { body }) });
    const httpMethod = init?.method ?? 'GET';
    const messages =
      httpMethod === 'POST'
        ? readJsonRpc(response.clone()).then(
            (read) => read.messages,
            () => [],
          )
        : Promise.resolve([]);
    this.exchanges.push({ httpMethod, rpcMethods, requestBody, status: response.status, requestHeaders: headers, messages });
    return response;
  };

  /** HTTP status of the most recent POST carrying `rpcMethod`. */
  lastStatus(rpcMethod: string): number | undefined {
    return [...this.exchanges].reverse().find((exchange) => exchange.rpcMethods.includes(rpcMethod))?.status;
  }

  /** The most recent POST carrying `rpcMethod`. */
  last(rpcMethod: string): HttpExchange | undefined {
    return [...this.exchanges].reverse().find((exchange) => exchange.rpcMethods.includes(rpcMethod));
  }

  /** The raw JSON-RPC response (`{result}` or `{error}`) of the most recent POST carrying `rpcMethod`. */
  async lastResponse(rpcMethod: string): Promise<{ result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } }> {
    const exchange = this.last(rpcMethod);
    if (!exchange) throw new Error(`no ${rpcMethod} request was sent`);
    const messages = (await exchange.messages) as Array<Record<string, unknown>>;
    const response = messages.find((message) => 'result' in message || 'error' in message);
    if (!response) throw new Error(`no JSON-RPC response to ${rpcMethod}`);
    return response as { result?: Record<string, unknown>; error?: { code: number; message: string } };
  }
}

/** A connected SDK 1.32.2 client (2025-11-25 and older) over Streamable HTTP. */
export interface V1HttpClient {
  client: V1Client;
  transport: V1HttpTransport;
  http: HttpRecorder;
  close(): Promise<void>;
}

/** Connect an SDK 1.32.2 `Client` over Streamable HTTP (a new legacy session). */
export async function connectV1Http(
  url: string,
  options: RecordingFetchOptions & {
    name?: string;
    http?: HttpRecorder;
    /** Client capabilities sent in `initialize` (e.g. `{ elicitation: { form: {} } }`). @defaultValue `{}` */
    capabilities?: ClientCapabilities;
    /**
     * Also declare `tasks: {}` (2025-11-25 R1); without it, a server with task fallback tools takes this client for
     * a host without task support. @defaultValue false (as the SDK client declares by default)
     */
    declareTasks?: boolean;
    /** Wrap the recording fetch (e.g. to read the GET stream as it arrives). */
    wrapFetch?: (recorded: HttpRecorder['fetch']) => HttpRecorder['fetch'];
  } = {},
): Promise<V1HttpClient> {
  const http = options.http ?? new HttpRecorder(options);
  const transport = new V1HttpTransport(new URL(url), { fetch: options.wrapFetch ? options.wrapFetch(http.fetch) : http.fetch });
  const client = new V1Client(
    { name: options.name ?? 'sdk-1.32.2-e2e', version: '1.0.0' },
    { capabilities: { ...(options.declareTasks === true ? { tasks: {} } : {}), ...options.capabilities } },
  );
  await client.connect(transport);
  return {
    client,
    transport,
    http,
    async close() {
      await transport.terminateSession().catch(() => {});
      await client.close();
    },
  };
}

/** Options of {@link connectV2Http}. */
export interface V2ClientOptions extends RecordingFetchOptions {
  /** Declare `io.modelcontextprotocol/tasks` in the client capabilities (every request's `_meta`). @defaultValue true */
  declareExtension?: boolean;
  /** @defaultValue `{ pin: '2026-07-28' }` */
  mode?: 'auto' | { pin: string };
  /** Record into this recorder (e.g. to inspect a failed connect). */
  http?: HttpRecorder;
}

/** A connected 2.4 client on the 2026-07-28 generation (v2) over HTTP. */
export interface V2HttpClient {
  client: V2Client;
  http: HttpRecorder;
  close(): Promise<void>;
}

/** Client capabilities of the 2.4 client, with or without the Tasks Extension. */
export function v2Capabilities(declareExtension: boolean): Record<string, JsonValue> {
  return declareExtension ? { extensions: { [TASKS_EXTENSION]: {} } } : {};
}

/** Connect a `@modelcontextprotocol/client@2.4.0` `Client` over Streamable HTTP with version negotiation on. */
export async function connectV2Http(url: string, options: V2ClientOptions = {}): Promise<V2HttpClient> {
  const http = options.http ?? new HttpRecorder(options);
  const transport = new V2HttpTransport(new URL(url), { fetch: http.fetch });
  const client = new V2Client(
    { name: 'client-2.4.0-e2e', version: '1.0.0' },
    { capabilities: v2Capabilities(options.declareExtension ?? true), versionNegotiation: { mode: options.mode ?? { pin: '2026-07-28' } } },
  );
  await client.connect(transport);
  return {
    client,
    http,
    async close() {
      await client.close();
    },
  };
}

/** What ext-tasks hands a raw dispatch: the framed request without `jsonrpc`/`id`. */
type RawRequest = { method: string; params?: Record<string, unknown> };
/** The ext-tasks raw request path. */
export type RawDispatch = RawClientDispatch;

let rawIds = 0;

function asRawRequest(request: JsonValue): RawRequest {
  if (typeof request !== 'object' || request === null || Array.isArray(request) || typeof (request as { method?: unknown }).method !== 'string')
    throw new TypeError('raw dispatch needs a JSON-RPC request object');
  return request as unknown as RawRequest;
}

/**
 * The host-owned raw request path ext-tasks needs for v2 (`tools/call` answered with `resultType: "task"`, which
 * the 2.4 client rejects): POST with a fresh id and the SEP-2243 headers (`MCP-Protocol-Version`, `Mcp-Method`,
 * `Mcp-Name`), SSE or JSON answers. Headers from ext-tasks (its own `Mcp-Name` for `tasks/*`) are merged
 * case-insensitively so nothing is sent twice (a duplicated `Mcp-Name` is a header mismatch, `-32020`).
 */
export function httpRawDispatch(url: string, http: HttpRecorder): RawDispatch {
  return async (request, options) => {
    const { method, params = {} } = asRawRequest(request);
    const headers = new Headers({
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
    });
    const name = method === 'tools/call' ? params.name : method.startsWith('tasks/') ? params.taskId : undefined;
    if (typeof name === 'string') headers.set('mcp-name', name);
    for (const [key, value] of Object.entries(options?.context?.headers ?? {})) headers.set(key, value);
    const body = JSON.stringify({ jsonrpc: '2.0', id: `raw-${++rawIds}`, method, params });
    const response = await readJsonRpc(await http.fetch(url, { method: 'POST', headers, body, ...(options?.signal ? { signal: options.signal } : {}) }));
    if (response.body.error) return { kind: 'error', error: response.body.error as { code: number; message: string; data?: JsonValue } };
    if (response.body.result) return { kind: 'result', result: response.body.result as JsonValue };
    throw new Error(`raw dispatch: no JSON-RPC response (HTTP ${response.status})`);
  };
}

/**
 * The raw request path over a message transport (stdio): the request goes out on the transport the 2.4 `Client`
 * already uses, with a string id the client never mints; its response is taken off the transport before the client
 * sees it. The v2 envelope is already framed by ext-tasks or the caller.
 */
export function transportRawDispatch(transport: Transport): RawDispatch {
  const pending = new Map<string, (message: Record<string, unknown>) => void>();
  const clientHandler = transport.onmessage;
  if (!clientHandler) throw new Error('transportRawDispatch: connect the client first');
  transport.onmessage = (message, extra) => {
    const id = (message as { id?: unknown }).id;
    const resolve = typeof id === 'string' ? pending.get(id) : undefined;
    if (resolve && ('result' in message || 'error' in message)) {
      pending.delete(id as string);
      resolve(message as unknown as Record<string, unknown>);
      return;
    }
    clientHandler.call(transport, message, extra);
  };
  return async (request) => {
    const { method, params = {} } = asRawRequest(request);
    const id = `raw-${++rawIds}`;
    const answered = new Promise<Record<string, unknown>>((resolve) => pending.set(id, resolve));
    await transport.send({ jsonrpc: '2.0', id, method, params } as never);
    const message = await answered;
    if (message.error) return { kind: 'error', error: message.error as { code: number; message: string; data?: JsonValue } };
    return { kind: 'result', result: message.result as JsonValue };
  };
}

/** The `_meta` envelope of a 2026-07-28 request as the 2.4 client frames it (for raw requests next to it). */
export function v2Framing(declareExtension = true): {
  protocolVersion: string;
  clientInfo: Record<string, JsonValue>;
  clientCapabilities: Record<string, JsonValue>;
} {
  return { protocolVersion: '2026-07-28', clientInfo: { name: 'client-2.4.0-e2e', version: '1.0.0' }, clientCapabilities: v2Capabilities(declareExtension) };
}

/** An ext-tasks session over a connected 2.4 client with our raw dispatch (v2 needs both, per the ext-tasks docs). */
export function createV2TaskSession(client: V2Client, rawDispatch: RawDispatch, endpointId = 'mcp-tasks-e2e'): TaskEnabledSession {
  return createTaskSessionFromClient(client, { endpointId, rawDispatch, v2RequestFraming: v2Framing(true), onError: () => {} });
}

/** The JSON-RPC error (code, bare message, data) carried by an error of any of the official clients. */
export function rpcError(error: unknown): { code: number; message: string; data?: unknown } {
  if (error instanceof McpError)
    return { code: error.code, message: error.message.replace(/^MCP error -?\d+: /, ''), ...(error.data === undefined ? {} : { data: error.data }) };
  if (error instanceof ProtocolError) return { code: error.code as number, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) };
  if (error instanceof JsonRpcResponseError) return { code: error.code, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) };
  throw new Error(`not a JSON-RPC error: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
}

/** Await a promise that must reject with a JSON-RPC error and return that error. */
export async function rejection(promise: Promise<unknown>): Promise<{ code: number; message: string; data?: unknown }> {
  let settled: unknown;
  try {
    settled = await promise;
  } catch (error) {
    return rpcError(error);
  }
  expect.fail(`expected a JSON-RPC error, got ${JSON.stringify(settled)}`);
}

/** Poll `read` until `done` accepts its value (no wall-clock assertions: the deadline only stops a hung test). */
export async function pollUntil<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  options: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${options.what ?? 'condition'} not reached; last value ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 25));
  }
}

/** Terminal task statuses (both generations). */
export const TERMINAL = ['completed', 'failed', 'cancelled'];

interface Gate {
  opened: Promise<void>;
  open(): void;
  started: Promise<void>;
  markStarted(): void;
  returned: Promise<void>;
  markReturned(): void;
}

function deferred(): { promise: Promise<void>; resolve(): void } {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

/**
 * Named gates for the in-process test tools below: a tool run waits until the test opens its gate, so tests control
 * when work ends without sleeping. Gate names should be unique per test.
 */
export class Gates {
  private readonly gates = new Map<string, Gate>();

  private get(name: string): Gate {
    let gate = this.gates.get(name);
    if (!gate) {
      const opened = deferred();
      const started = deferred();
      const returned = deferred();
      gate = {
        opened: opened.promise,
        open: opened.resolve,
        started: started.promise,
        markStarted: started.resolve,
        returned: returned.promise,
        markReturned: returned.resolve,
      };
      this.gates.set(name, gate);
    }
    return gate;
  }

  /** Let the run(s) waiting on `name` finish. */
  open(name: string): void {
    this.get(name).open();
  }

  /** Resolves once a run has started waiting on `name`. */
  started(name: string): Promise<void> {
    return this.get(name).started;
  }

  /** Resolves once a run waiting on `name` has returned its result to the runtime. */
  returned(name: string): Promise<void> {
    return this.get(name).returned;
  }

  /** Wait for the gate; with a signal the wait ends (rejects) when the run is aborted. */
  async wait(name: string, signal?: AbortSignal): Promise<void> {
    const gate = this.get(name);
    gate.markStarted();
    if (!signal) return gate.opened;
    await new Promise<void>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      void gate.opened.then(resolve);
    });
  }

  /** Record that the run waiting on `name` returned. */
  markReturned(name: string): void {
    this.get(name).markReturned();
  }
}

/**
 * In-process test tools driven by {@link Gates}:
 * - `gated` (task-optional): ends with "released <gate>" when its gate opens; honours cancellation;
 * - `stubborn` (task-optional): ignores cancellation and returns "finished <gate>" when its gate opens, so tests can
 *   check that a late outcome never overwrites `cancelled` (R42).
 */
export function gatedTools(gates: Gates): AnyToolDefinition[] {
  return [
    defineTool({
      name: 'gated',
      description: 'Waits for a test-controlled gate, then reports.',
      execution: 'task-optional',
      inputSchema: z.object({ gate: z.string() }),
      async run({ gate }, ctx) {
        await gates.wait(gate, ctx.signal);
        return textResult(`released ${gate}`);
      },
    }),
    defineTool({
      name: 'stubborn',
      description: 'Waits for a test-controlled gate ignoring cancellation, then reports success.',
      execution: 'task-optional',
      inputSchema: z.object({ gate: z.string() }),
      async run({ gate }) {
        try {
          await gates.wait(gate);
          return textResult(`finished ${gate}`);
        } finally {
          setImmediate(() => gates.markReturned(gate));
        }
      },
    }),
  ];
}
