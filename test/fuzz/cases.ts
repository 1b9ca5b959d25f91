/**
 * Generated hostile input for both transports and both generations (issue 10 §3), as fast-check arbitraries. Each
 * generated case belongs to a class, and each class states the one answer it must get (HTTP status and JSON-RPC
 * code, or for stdio the code or the absence of an answer). A case is built against the live {@link World} (task
 * ids, sessions, cursors and request state that exist on the server) when it is sent.
 */
import fc from 'fast-check';

import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../src/server/http/body.js';
import type { HttpAnswer, HttpProbe } from '../helpers/raw-http.js';

export type Generation = 'v1' | 'v2';

/** What exists on the server: the fuzzer's own principal A, another principal B. */
export interface World {
  tokens: { a: string; b: string } | undefined;
  /** HTTP: A's and B's 2025-11-25 sessions. */
  sessions: { a: string; b: string } | undefined;
  /** A's tasks (all, and those known to be terminal) and B's, per generation. */
  own: Record<Generation, string[]>;
  ownTerminal: Record<Generation, string[]>;
  foreign: Record<Generation, string[]>;
  /** v1 `tasks/list` cursors minted for A and for B (HTTP with authentication only). */
  cursors: { a: string; b: string } | undefined;
  /** MRTR `requestState` values issued to A and to B (v2 `test_tool_with_task`). */
  requestStates: { a: string; b: string } | undefined;
}

export const V2 = '2026-07-28';
export const V1 = '2025-11-25';
export const NOT_FOUND = { code: -32602, message: 'Failed to retrieve task: Task not found' };
const META = {
  'io.modelcontextprotocol/protocolVersion': V2,
  'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } },
  'io.modelcontextprotocol/clientInfo': { name: 'fuzz', version: '1' },
};

/** A request message before framing (no `_meta`, no `jsonrpc`). */
export interface Message {
  method: string;
  params: Record<string, unknown>;
}

/** What a case must get back; `undefined` from `check` = as required. */
export type Check<A> = (answer: A) => string | undefined;

/** One generated HTTP case. */
export interface HttpCase {
  kind: string;
  build(world: World, id: string): HttpProbe;
  check: Check<HttpAnswer>;
  /** Called with the answer of a passing case (to learn new task ids). */
  learn?: (world: World, answer: HttpAnswer) => void;
}

/** One generated stdio case: `line` is written as is; `id` is the id to wait for (none: no answer may come). */
export interface StdioCase {
  kind: string;
  build(world: World, id: string): { line: string; id?: string };
  /** Checks the answer (`undefined` when no answer was awaited). */
  check: Check<Record<string, unknown> | undefined>;
  /** How many `id: null` answers this line must produce. */
  nullIdAnswers?: number;
  learn?: (world: World, answer: Record<string, unknown>) => void;
}

// ---------------------------------------------------------------------------------------------------------------
// Building blocks

const pick = <T>(list: readonly T[], index: number): T | undefined => (list.length === 0 ? undefined : list[index % list.length]);

/** A value for an SEP-2243 header: plain when it is safe printable ASCII, else `=?base64?…?=`. */
export function headerValue(value: string): string {
  return /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value) && !value.startsWith('=?')
    ? value
    : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

function mcpName(message: Message): string | undefined {
  const { method, params } = message;
  if (method === 'tools/call' && typeof params.name === 'string') return params.name;
  if (method.startsWith('tasks/') && typeof params.taskId === 'string') return params.taskId;
  return undefined;
}

/** A 2026-07-28 POST with matching SEP-2243 headers and A's token, unless overridden. */
export function v2Probe(
  world: World,
  id: string,
  message: Message,
  options: { headers?: Record<string, string | undefined>; meta?: object; raw?: string } = {},
): HttpProbe {
  const name = mcpName(message);
  const headers: Record<string, string | undefined> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': V2,
    'mcp-method': message.method,
    ...(name === undefined ? {} : { 'mcp-name': headerValue(name) }),
    ...(world.tokens ? { authorization: `Bearer ${world.tokens.a}` } : {}),
    ...options.headers,
  };
  const body = options.raw ?? JSON.stringify({ jsonrpc: '2.0', id, method: message.method, params: { ...message.params, _meta: options.meta ?? META } });
  return {
    method: 'POST',
    path: '/mcp',
    headers: Object.fromEntries(Object.entries(headers).filter((entry): entry is [string, string] => entry[1] !== undefined)),
    body,
  };
}

/** A 2025-11-25 POST in A's session (or `session`), with A's token. */
export function v1Probe(world: World, id: string, message: Message, options: { session?: string; token?: string } = {}): HttpProbe {
  return {
    method: 'POST',
    path: '/mcp',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': V1,
      'mcp-session-id': options.session ?? (world.sessions?.a as string),
      ...(world.tokens ? { authorization: `Bearer ${options.token ?? world.tokens.a}` } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: message.method, params: message.params }),
  };
}

/** A stdio line: v2 requests carry the `_meta` envelope, v1 ones do not (the session negotiated in `initialize`). */
export function stdioLine(generation: Generation, id: string, message: Message): string {
  const params = generation === 'v2' ? { ...message.params, _meta: META } : message.params;
  return JSON.stringify({ jsonrpc: '2.0', id, method: message.method, params });
}

const errorOf = (answer: HttpAnswer | Record<string, unknown> | undefined) =>
  ((answer && 'status' in answer ? answer.message : answer) as HttpAnswer['message'])?.error;

/** HTTP `status` and JSON-RPC error `code` (and, when given, exactly this error). */
function httpError(status: number, code: number, exact?: { code: number; message: string }): Check<HttpAnswer> {
  return (answer) => {
    const error = answer.message?.error;
    if (answer.status !== status || error?.code !== code)
      return `expected HTTP ${status} with ${code}, got HTTP ${answer.status}: ${answer.text.slice(0, 300)}`;
    if (exact && (error.message !== exact.message || 'data' in error)) return `expected exactly ${JSON.stringify(exact)}, got ${JSON.stringify(error)}`;
    return undefined;
  };
}

/** HTTP 200 with a result. */
const httpResult: Check<HttpAnswer> = (answer) =>
  answer.status === 200 && answer.message?.result !== undefined
    ? undefined
    : `expected HTTP 200 with a result, got HTTP ${answer.status}: ${answer.text.slice(0, 300)}`;

/** A stdio answer with error `code` (exactly `exact` when given). */
function stdioError(code: number, exact?: { code: number; message: string }): Check<Record<string, unknown> | undefined> {
  return (answer) => {
    const error = errorOf(answer);
    if (error?.code !== code) return `expected error ${code}, got ${JSON.stringify(answer).slice(0, 300)}`;
    if (exact && (error.message !== exact.message || 'data' in error)) return `expected exactly ${JSON.stringify(exact)}, got ${JSON.stringify(error)}`;
    return undefined;
  };
}

const stdioResult: Check<Record<string, unknown> | undefined> = (answer) =>
  answer && 'result' in answer ? undefined : `expected a result, got ${JSON.stringify(answer).slice(0, 300)}`;

/** Accept any one of `checks`. */
function either<A>(...checks: Array<Check<A>>): Check<A> {
  return (answer) => {
    const failures = checks.map((check) => check(answer));
    return failures.includes(undefined) ? undefined : failures.join(' | ');
  };
}

// Random task ids: printable ASCII (some ids collide with nothing), unicode, and one-character mutations of real ids.
const randomId = fc.oneof(
  fc.string({ minLength: 1, maxLength: 40, unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.split('')) }),
  fc.string({ minLength: 1, maxLength: 30, unit: 'grapheme' }),
  fc.string({ minLength: 1, maxLength: 30 }).filter((s) => s.trim().length > 0),
);

/** A task id that is not one of A's: random, or a real id of A with one character changed. */
const notOwnId = fc.tuple(randomId, fc.nat(), fc.nat(), fc.boolean()).map(([random, which, at, mutate]) => (world: World, generation: Generation): string => {
  const own = pick(world.own[generation], which);
  if (!mutate || !own) return random;
  const index = at % own.length;
  const replacement = own[index] === 'A' ? 'B' : 'A';
  return `${own.slice(0, index)}${replacement}${own.slice(index + 1)}`;
});

const TASK_METHODS_V2 = ['tasks/get', 'tasks/cancel', 'tasks/update'] as const;
const METHOD_SUFFIX = fc.string({
  minLength: 1,
  maxLength: 30,
  unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/_.-'.split('')),
});

/** Shows a case as its class in fast-check's counterexamples (not as the source of its closures). */
function named<T extends { kind: string }>(fuzzCase: T): T {
  return Object.assign(fuzzCase, { [fc.toStringMethod]: () => fuzzCase.kind });
}
const TASK_METHODS_V1 = ['tasks/get', 'tasks/result', 'tasks/cancel'] as const;

function taskParams(method: string, taskId: unknown, responses: Record<string, unknown> = {}): Record<string, unknown> {
  return method === 'tasks/update' ? { taskId, inputResponses: responses } : { taskId };
}

/** Junk that is valid JSON but no JSON-RPC message. */
const nonRpcJson = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.string(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.oneof(fc.integer(), fc.string(), fc.constant(null)), { minLength: 1, maxLength: 5 }),
  fc.dictionary(
    fc.string({ maxLength: 8 }).filter((key) => !['jsonrpc', 'method', 'result', 'error', 'id', '__proto__'].includes(key)),
    fc.jsonValue({ maxDepth: 2 }),
    { maxKeys: 5 },
  ),
  fc.record({
    jsonrpc: fc.constant('2.0'),
    id: fc.oneof(
      fc.constant(null),
      fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }),
      fc.array(fc.integer(), { maxLength: 2 }),
      fc.boolean(),
    ),
    method: fc.constant('tasks/get'),
    params: fc.constant({}),
  }),
  fc.record({ jsonrpc: fc.constant('2.0'), id: fc.integer(), method: fc.oneof(fc.integer(), fc.constant(null), fc.boolean()) }),
  fc.record({ jsonrpc: fc.constantFrom('1.0', '2', ''), id: fc.integer(), method: fc.constant('tasks/get'), params: fc.constant({}) }),
);

/** Bytes that are not JSON: random text and valid messages cut short. */
const nonJson = fc.oneof(
  fc.string({ minLength: 1, maxLength: 200 }).filter((text) => {
    try {
      JSON.parse(text);
      return false;
    } catch {
      return true;
    }
  }),
  fc
    .nat({ max: 120 })
    .map((cut) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { taskId: 'x', _meta: META } }).slice(0, cut + 1))
    .filter((text) => {
      try {
        JSON.parse(text);
        return false;
      } catch {
        return true;
      }
    }),
  fc
    .uint8Array({ minLength: 1, maxLength: 64 })
    .map((bytes) => Buffer.from(bytes).toString('latin1'))
    .filter((text) => {
      try {
        JSON.parse(text);
        return false;
      } catch {
        return true;
      }
    }),
);

/** Values of the wrong type for a string parameter. */
const wrongType = fc.oneof(
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 2 }),
  fc.constant(''),
);

/** Arrays and objects nested `depth` levels (as JSON text). */
function nested(depth: number, objects: boolean): string {
  return objects ? `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}` : `${'['.repeat(depth)}${']'.repeat(depth)}`;
}

/** Random input responses (well-formed or not). */
const responses = fc.dictionary(
  fc.oneof(fc.constant('input-1'), fc.constant('input-2'), fc.string({ maxLength: 10 })),
  fc.oneof(fc.constant({ action: 'accept', content: { confirm: true } }), fc.constant({ action: 'decline' }), fc.jsonValue({ maxDepth: 2 })),
  { maxKeys: 3 },
);

// ---------------------------------------------------------------------------------------------------------------
// HTTP classes

function learnV2Task(world: World, answer: HttpAnswer): void {
  const taskId = answer.message?.result?.taskId;
  if (typeof taskId === 'string') world.own.v2.push(taskId);
}

function learnV1Task(world: World, answer: HttpAnswer): void {
  const task = answer.message?.result?.task as { taskId?: unknown } | undefined;
  if (typeof task?.taskId === 'string') world.own.v1.push(task.taskId);
}

const wrongHeaderCases: Array<{
  kind: string;
  headers: (world: World) => Record<string, string | undefined>;
  meta?: object;
  method?: string;
  path?: string;
  check: Check<HttpAnswer>;
}> = [
  { kind: 'header: MCP-Protocol-Version differs from the body', headers: () => ({ 'mcp-protocol-version': V1 }), check: httpError(400, -32020) },
  {
    kind: 'header: unsupported protocol version in header and body',
    headers: () => ({ 'mcp-protocol-version': '2099-01-01' }),
    meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' },
    check: httpError(400, -32022),
  },
  { kind: 'header: Mcp-Method differs from the body', headers: () => ({ 'mcp-method': 'tools/list' }), check: httpError(400, -32020) },
  { kind: 'header: Mcp-Name differs from the body', headers: () => ({ 'mcp-name': 'someone-else' }), check: httpError(400, -32020) },
  { kind: 'header: Mcp-Name missing', headers: () => ({ 'mcp-name': undefined }), check: httpError(400, -32020) },
  {
    kind: 'header: Origin not allowed',
    headers: () => ({ origin: 'http://evil.example' }),
    check: (answer) => (answer.status === 403 ? undefined : `expected 403, got ${answer.status}`),
  },
  {
    kind: 'header: Host not allowed',
    headers: () => ({ host: 'evil.example:80' }),
    check: (answer) => (answer.status === 403 ? undefined : `expected 403, got ${answer.status}`),
  },
  { kind: 'HTTP method not allowed', headers: () => ({}), method: 'PUT', check: httpError(405, -32600) },
  { kind: 'unknown path', headers: () => ({}), path: '/other', check: httpError(404, -32601) },
];

const unauthorized: Check<HttpAnswer> = (answer) =>
  answer.status === 401 && /^Bearer error="invalid_token"/.test(String(answer.headers['www-authenticate'])) && !answer.text.includes('"result"')
    ? undefined
    : `expected 401 with a Bearer challenge, got ${answer.status} ${String(answer.headers['www-authenticate'])}`;

/** The HTTP classes; `authenticated` adds the token and session classes. */
export function httpCases(authenticated: boolean): fc.Arbitrary<HttpCase> {
  const classes: Array<fc.WeightedArbitrary<HttpCase>> = [
    {
      weight: 3,
      arbitrary: nonJson.map((text): HttpCase => ({
        kind: 'malformed JSON',
        build: (w, id) => v2Probe(w, id, { method: 'tasks/get', params: {} }, { raw: text }),
        check: httpError(400, -32700),
      })),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom('', ' ', '\n').map((text): HttpCase => ({
        kind: 'empty body',
        build: (w, id) => v2Probe(w, id, { method: 'tasks/get', params: {} }, { raw: text }),
        check: httpError(400, -32700),
      })),
    },
    {
      weight: 3,
      arbitrary: nonRpcJson.map((value): HttpCase => ({
        kind: 'JSON that is no JSON-RPC message',
        build: (w, id) => v2Probe(w, id, { method: 'tasks/get', params: {} }, { raw: JSON.stringify(value) }),
        check: httpError(400, -32600),
      })),
    },
    {
      weight: 3,
      // Method names as HTTP can carry them verbatim in Mcp-Method (the SDK does not decode a base64 Mcp-Method).
      arbitrary: METHOD_SUFFIX.map((suffix): HttpCase => ({
        kind: 'unknown method',
        build: (w, id) => v2Probe(w, id, { method: `x-fuzz/${suffix}`, params: {} }),
        check: httpError(404, -32601),
      })),
    },
    {
      weight: 4,
      arbitrary: fc.tuple(fc.constantFrom(...TASK_METHODS_V2), wrongType).map(([method, taskId]): HttpCase => ({
        kind: 'wrong param types (v2 task methods)',
        build: (w, id) => v2Probe(w, id, { method, params: taskParams(method, taskId) }),
        check: httpError(200, -32602),
      })),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.oneof(fc.integer(), fc.constant(null), fc.array(fc.integer(), { maxLength: 2 })), fc.constantFrom('slow_compute', 'confirm_delete'))
        .map(([args, name]): HttpCase => ({
          kind: 'wrong argument type (tools/call)',
          build: (w, id) => v2Probe(w, id, { method: 'tools/call', params: { name, arguments: args } }),
          check: httpError(200, -32602),
        })),
    },
    {
      weight: 2,
      arbitrary: fc.jsonValue({ maxDepth: 3 }).map((seconds): HttpCase => ({
        kind: 'invalid tool arguments (tools/call)',
        build: (w, id) =>
          v2Probe(w, id, {
            method: 'tools/call',
            params: { name: 'slow_compute', arguments: { seconds: typeof seconds === 'number' ? -1 - Math.abs(seconds) : seconds } },
          }),
        check: (answer) =>
          answer.status === 200 && answer.message?.result?.isError === true
            ? undefined
            : `expected an isError tool result, got ${answer.status} ${answer.text.slice(0, 200)}`,
      })),
    },
    {
      weight: 3,
      // Around the limit, and far beyond it (thousands of levels overflowed the stack before the guard existed).
      arbitrary: fc
        .tuple(
          fc.oneof(fc.integer({ min: 1, max: 2 * MAX_JSON_DEPTH }), fc.integer({ min: 2 * MAX_JSON_DEPTH, max: 20_000 })),
          fc.boolean(),
          fc.constantFrom(...TASK_METHODS_V2),
        )
        .map(([depth, objects, method]): HttpCase => {
          const body = (id: string) =>
            JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...taskParams(method, 'no-such-task'), deep: 'DEEP', _meta: META } }).replace(
              '"DEEP"',
              nested(depth, objects),
            );
          return {
            kind: 'deeply nested values',
            build: (w, id) => v2Probe(w, id, { method, params: { taskId: 'no-such-task' } }, { raw: body(id) }),
            check: (answer) =>
              nestsDeeperThan(Buffer.from(body('x')), MAX_JSON_DEPTH) ? httpError(400, -32600)(answer) : httpError(200, -32602, NOT_FOUND)(answer),
          };
        }),
    },
    {
      weight: 2,
      arbitrary: fc.integer({ min: 1024, max: 256 * 1024 }).map((size): HttpCase => ({
        kind: 'huge string argument',
        build: (w, id) => v2Probe(w, id, { method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 0, label: 'x'.repeat(size) } } }),
        check: (answer) =>
          answer.status === 200 && answer.message?.result?.resultType === 'task'
            ? undefined
            : `expected a task, got ${answer.status} ${answer.text.slice(0, 200)}`,
        learn: learnV2Task,
      })),
    },
    {
      weight: 1,
      arbitrary: fc.integer({ min: 20_000, max: 200_000 }).map((size): HttpCase => ({
        kind: 'huge task id (header too large)',
        build: (w, id) => v2Probe(w, id, { method: 'tasks/get', params: { taskId: 'y'.repeat(size) } }),
        // Node's HTTP parser answers 431 and closes; the client may see the close before the answer.
        check: (answer) => (answer.status === 431 || answer.reset ? undefined : `expected 431, got ${answer.status} ${answer.text.slice(0, 200)}`),
      })),
    },
    {
      weight: 1,
      arbitrary: fc.integer({ min: 2000, max: 12_000 }).map((size): HttpCase => ({
        kind: 'long task id',
        build: (w, id) => v2Probe(w, id, { method: 'tasks/get', params: { taskId: 'z'.repeat(size) } }),
        check: httpError(200, -32602, NOT_FOUND),
      })),
    },
    {
      weight: 1,
      arbitrary: fc.integer({ min: 1, max: 64 * 1024 }).map((extra): HttpCase => ({
        kind: 'body over the size limit',
        build: (w, id) =>
          v2Probe(w, id, { method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 0, label: 'x'.repeat(4 * 1024 * 1024 + extra) } } }),
        check: httpError(413, -32600),
      })),
    },
    ...wrongHeaderCases.map((spec): fc.WeightedArbitrary<HttpCase> => ({
      weight: 1,
      arbitrary: fc.nat().map((which): HttpCase => ({
        kind: spec.kind,
        build: (w, id) => {
          const taskId = pick(w.own.v2, which) ?? 'no-such-task';
          const probe = v2Probe(w, id, { method: 'tasks/get', params: { taskId } }, { headers: spec.headers(w), ...(spec.meta ? { meta: spec.meta } : {}) });
          return { ...probe, method: spec.method ?? probe.method, path: spec.path ?? probe.path };
        },
        check: spec.check,
      })),
    })),
    {
      weight: 5,
      arbitrary: fc.tuple(fc.constantFrom(...TASK_METHODS_V2), notOwnId, responses).map(([method, id, inputResponses]): HttpCase => ({
        kind: 'random or mutated task id (v2)',
        build: (w, rpcId) => v2Probe(w, rpcId, { method, params: taskParams(method, id(w, 'v2'), inputResponses) }),
        check: httpError(200, -32602, NOT_FOUND),
      })),
    },
    {
      weight: 2,
      arbitrary: fc.tuple(fc.constantFrom(...TASK_METHODS_V2), fc.nat()).map(([method, which]): HttpCase => ({
        kind: 'v1 task id through v2 (other generation)',
        build: (w, id) => v2Probe(w, id, { method, params: taskParams(method, pick(w.own.v1, which) ?? 'none') }),
        check: httpError(200, -32602, NOT_FOUND),
      })),
    },
    {
      weight: 3,
      arbitrary: fc.tuple(fc.nat(), fc.string({ maxLength: 40 }), fc.nat({ max: 2 }), responses).map(([at, junk, variant, inputResponses]): HttpCase => ({
        kind: 'forged request state (v2 MRTR)',
        build: (w, id) => {
          const issued = w.requestStates;
          const mutate = (state: string) =>
            `${state.slice(0, at % state.length)}${state[at % state.length] === 'A' ? 'B' : 'A'}${state.slice((at % state.length) + 1)}`;
          const requestState = !issued || variant === 0 ? junk || 'x' : variant === 1 ? mutate(issued.a) : issued.b;
          return v2Probe(w, id, { method: 'tools/call', params: { name: 'test_tool_with_task', arguments: {}, requestState, inputResponses } });
        },
        check: httpError(200, -32602, { code: -32602, message: 'Invalid or expired requestState' }),
      })),
    },
    {
      weight: 6,
      arbitrary: fc.tuple(fc.nat({ max: 5 }), fc.nat(), responses).map(([op, which, inputResponses]): HttpCase => {
        switch (op) {
          case 0:
            return {
              kind: 'valid: create a task (v2)',
              build: (w, id) => v2Probe(w, id, { method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 0 } } }),
              check: httpResult,
              learn: learnV2Task,
            };
          case 1:
            return {
              kind: 'valid: create a task that asks (v2)',
              build: (w, id) => v2Probe(w, id, { method: 'tools/call', params: { name: 'confirm_delete', arguments: { filename: `f${which}.txt` } } }),
              check: httpResult,
              learn: learnV2Task,
            };
          case 2:
            return {
              kind: 'valid: tasks/get (v2)',
              build: (w, id) => v2Probe(w, id, { method: 'tasks/get', params: { taskId: pick(w.own.v2, which) } }),
              check: httpResult,
            };
          case 3:
            return {
              kind: 'valid: tasks/update with any answers (v2)',
              build: (w, id) => v2Probe(w, id, { method: 'tasks/update', params: { taskId: pick(w.own.v2, which), inputResponses } }),
              check: httpResult,
            };
          case 4:
            return {
              kind: 'valid: tasks/cancel (v2)',
              build: (w, id) => v2Probe(w, id, { method: 'tasks/cancel', params: { taskId: pick(w.own.v2, which) } }),
              check: httpResult,
            };
          default:
            return { kind: 'valid: tools/list (v2)', build: (w, id) => v2Probe(w, id, { method: 'tools/list', params: {} }), check: httpResult };
        }
      }),
    },
    {
      weight: 1,
      arbitrary: METHOD_SUFFIX.map((suffix): HttpCase => ({
        kind: 'notification (v2)',
        build: (w) => {
          const probe = v2Probe(w, 'unused', { method: `notifications/x-fuzz-${suffix}`, params: {} });
          return { ...probe, body: JSON.stringify({ jsonrpc: '2.0', method: `notifications/x-fuzz-${suffix}`, params: { _meta: META } }) };
        },
        check: (answer) => (answer.status === 202 ? undefined : `expected 202, got ${answer.status} ${answer.text.slice(0, 200)}`),
      })),
    },
  ];
  if (authenticated) {
    classes.push(
      {
        weight: 2,
        arbitrary: fc
          .oneof(
            fc.constant(undefined),
            fc
              .string({ minLength: 1, maxLength: 60, unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789-._~+/'.split('')) })
              .map((t) => `Bearer ${t}`),
            fc.constant('Basic Zm9vOmJhcg=='),
            fc.string({ maxLength: 30 }).filter((t) => /^[\x20-\x7e]*$/.test(t)),
          )
          .map((authorization): HttpCase => ({
            kind: 'missing or wrong credentials',
            build: (w, id) => v2Probe(w, id, { method: 'tasks/get', params: { taskId: pick(w.own.v2, 0) ?? 'x' } }, { headers: { authorization } }),
            check: unauthorized,
          })),
      },
      {
        weight: 5,
        arbitrary: fc.tuple(fc.constantFrom(...TASK_METHODS_V2), fc.nat(), responses).map(([method, which, inputResponses]): HttpCase => ({
          kind: "another owner's task id (v2)",
          build: (w, id) => v2Probe(w, id, { method, params: taskParams(method, pick(w.foreign.v2, which), inputResponses) }),
          check: httpError(200, -32602, NOT_FOUND),
        })),
      },
      {
        weight: 5,
        arbitrary: fc.tuple(fc.constantFrom(...TASK_METHODS_V1), fc.nat(), fc.boolean(), notOwnId).map(([method, which, foreign, random]): HttpCase => ({
          kind: "another owner's or a random task id (v1)",
          build: (w, id) => v1Probe(w, id, { method, params: { taskId: foreign ? pick(w.foreign.v1, which) : random(w, 'v1') } }),
          check: httpError(200, -32602, NOT_FOUND),
        })),
      },
      {
        weight: 3,
        arbitrary: fc.tuple(fc.nat(), fc.string({ maxLength: 60 }), fc.nat({ max: 2 })).map(([at, junk, variant]): HttpCase => ({
          kind: 'forged cursor (v1 tasks/list)',
          build: (w, id) => {
            const cursors = w.cursors as { a: string; b: string };
            const mutate = (cursor: string) =>
              `${cursor.slice(0, at % cursor.length)}${cursor[at % cursor.length] === 'A' ? 'B' : 'A'}${cursor.slice((at % cursor.length) + 1)}`;
            return v1Probe(w, id, { method: 'tasks/list', params: { cursor: variant === 0 ? junk : variant === 1 ? mutate(cursors.a) : cursors.b } });
          },
          check: httpError(200, -32602, { code: -32602, message: 'Invalid cursor' }),
        })),
      },
      {
        weight: 2,
        arbitrary: fc
          .tuple(
            fc.string({ minLength: 1, maxLength: 40 }).filter((s) => /^[\x21-\x7e]+$/.test(s)),
            fc.boolean(),
          )
          .map(([session, foreign]): HttpCase => ({
            kind: "unknown or another owner's session (v1)",
            build: (w, id) =>
              v1Probe(
                w,
                id,
                { method: 'tasks/get', params: { taskId: pick(w.own.v1, 0) ?? 'x' } },
                { session: foreign ? (w.sessions as { b: string }).b : session },
              ),
            check: httpError(404, -32001),
          })),
      },
      {
        weight: 4,
        arbitrary: fc.tuple(fc.nat({ max: 4 }), fc.nat()).map(([op, which]): HttpCase => {
          switch (op) {
            case 0:
              return {
                kind: 'valid: create a task (v1)',
                build: (w, id) => v1Probe(w, id, { method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 0 }, task: { ttl: 600_000 } } }),
                check: httpResult,
                learn: learnV1Task,
              };
            case 1:
              return {
                kind: 'valid: tasks/get (v1)',
                build: (w, id) => v1Probe(w, id, { method: 'tasks/get', params: { taskId: pick(w.own.v1, which) } }),
                check: httpResult,
              };
            case 2:
              return {
                kind: 'valid: tasks/result of a finished task (v1)',
                build: (w, id) => v1Probe(w, id, { method: 'tasks/result', params: { taskId: pick(w.ownTerminal.v1, which) } }),
                check: httpResult,
              };
            case 3:
              return { kind: 'valid: tasks/list (v1)', build: (w, id) => v1Probe(w, id, { method: 'tasks/list', params: {} }), check: httpResult };
            default:
              // A finished task cannot be cancelled in 2025-11-25 (-32602); one still working can.
              return {
                kind: 'valid: tasks/cancel (v1)',
                build: (w, id) => v1Probe(w, id, { method: 'tasks/cancel', params: { taskId: pick(w.own.v1, which) } }),
                check: either(httpResult, httpError(200, -32602)),
              };
          }
        }),
      },
    );
  }
  return fc.oneof(...classes).map(named);
}

// ---------------------------------------------------------------------------------------------------------------
// stdio classes

function learnStdio(generation: Generation) {
  return (world: World, answer: Record<string, unknown>): void => {
    const result = answer.result as { taskId?: unknown; task?: { taskId?: unknown } } | undefined;
    const taskId = generation === 'v2' ? result?.taskId : result?.task?.taskId;
    if (typeof taskId === 'string') world.own[generation].push(taskId);
  };
}

/** The stdio classes of one generation (a v1 peer has sent `initialize` first). */
export function stdioCases(generation: Generation): fc.Arbitrary<StdioCase> {
  const methods = generation === 'v2' ? TASK_METHODS_V2 : TASK_METHODS_V1;
  const other: Generation = generation === 'v2' ? 'v1' : 'v2';
  const request = (method: string, params: Record<string, unknown>, check: StdioCase['check'], kind: string, learn?: StdioCase['learn']): StdioCase => ({
    kind,
    build: (_w, id) => ({ line: stdioLine(generation, id, { method, params }), id }),
    check,
    ...(learn ? { learn } : {}),
  });
  const classes: Array<fc.WeightedArbitrary<StdioCase>> = [
    // The SDK skips lines that are not JSON (stray output), by design: no answer, and the connection stays usable.
    {
      weight: 2,
      arbitrary: nonJson
        .filter((text) => !text.includes('\n') && !text.includes('\r'))
        .map((text): StdioCase => ({ kind: 'non-JSON line', build: () => ({ line: text }), check: () => undefined })),
    },
    {
      weight: 3,
      arbitrary: nonRpcJson.map((value): StdioCase => ({
        kind: 'JSON that is no JSON-RPC message',
        build: () => ({ line: JSON.stringify(value) }),
        check: () => undefined,
        nullIdAnswers: 1,
      })),
    },
    { weight: 3, arbitrary: fc.string({ minLength: 1, maxLength: 30 }).map((suffix) => request(`x-fuzz/${suffix}`, {}, stdioError(-32601), 'unknown method')) },
    {
      weight: 4,
      arbitrary: fc
        .tuple(fc.constantFrom(...methods), wrongType)
        .map(([method, taskId]) => request(method, taskParams(method, taskId), stdioError(-32602), 'wrong param types')),
    },
    {
      weight: 3,
      arbitrary: fc.tuple(fc.integer({ min: 1, max: 3000 }), fc.boolean(), fc.constantFrom(...methods)).map(([depth, objects, method]): StdioCase => ({
        kind: 'deeply nested values',
        build: (_w, id) => ({
          line: stdioLine(generation, id, { method, params: { ...taskParams(method, 'no-such-task'), deep: 'DEEP' } }).replace(
            '"DEEP"',
            nested(depth, objects),
          ),
          id,
        }),
        check: stdioError(-32602, NOT_FOUND),
      })),
    },
    {
      weight: 2,
      arbitrary: fc
        .integer({ min: 1024, max: 512 * 1024 })
        .map((size) =>
          generation === 'v2'
            ? request(
                'tools/call',
                { name: 'slow_compute', arguments: { seconds: 0, label: 'x'.repeat(size) } },
                (a) =>
                  (a?.result as { resultType?: unknown } | undefined)?.resultType === 'task'
                    ? undefined
                    : `expected a task, got ${JSON.stringify(a).slice(0, 200)}`,
                'huge string argument',
                learnStdio('v2'),
              )
            : request(
                'tools/call',
                { name: 'slow_compute', arguments: { seconds: 0, label: 'x'.repeat(size) }, task: {} },
                stdioResult,
                'huge string argument',
                learnStdio('v1'),
              ),
        ),
    },
    {
      weight: 5,
      arbitrary: fc.tuple(fc.constantFrom(...methods), notOwnId).map(([method, id]): StdioCase => ({
        kind: 'random or mutated task id',
        build: (w, rpcId) => ({ line: stdioLine(generation, rpcId, { method, params: taskParams(method, id(w, generation)) }), id: rpcId }),
        check: stdioError(-32602, NOT_FOUND),
      })),
    },
    {
      weight: 2,
      arbitrary: fc.tuple(fc.constantFrom(...methods), fc.nat()).map(([method, which]): StdioCase => ({
        kind: 'task id of the other generation',
        build: (w, id) => ({ line: stdioLine(generation, id, { method, params: taskParams(method, pick(w.own[other], which) ?? 'none') }), id }),
        check: stdioError(-32602, NOT_FOUND),
      })),
    },
    {
      weight: 4,
      arbitrary: fc.tuple(fc.nat({ max: 3 }), fc.nat(), responses).map(([op, which, inputResponses]): StdioCase => {
        const pickOwn = (w: World) => pick(w.own[generation], which);
        if (op === 0)
          return generation === 'v2'
            ? request('tools/call', { name: 'slow_compute', arguments: { seconds: 0 } }, stdioResult, 'valid: create a task', learnStdio('v2'))
            : request('tools/call', { name: 'slow_compute', arguments: { seconds: 0 }, task: {} }, stdioResult, 'valid: create a task', learnStdio('v1'));
        if (op === 1)
          return {
            kind: 'valid: tasks/get',
            build: (w, id) => ({ line: stdioLine(generation, id, { method: 'tasks/get', params: { taskId: pickOwn(w) } }), id }),
            check: stdioResult,
          };
        if (op === 2 && generation === 'v2')
          return {
            kind: 'valid: tasks/update with any answers',
            build: (w, id) => ({ line: stdioLine('v2', id, { method: 'tasks/update', params: { taskId: pickOwn(w), inputResponses } }), id }),
            check: stdioResult,
          };
        if (op === 2)
          return {
            kind: 'valid: tasks/result of a finished task',
            build: (w, id) => ({ line: stdioLine('v1', id, { method: 'tasks/result', params: { taskId: pick(w.ownTerminal.v1, which) } }), id }),
            check: stdioResult,
          };
        return {
          kind: 'valid: tasks/cancel',
          build: (w, id) => ({ line: stdioLine(generation, id, { method: 'tasks/cancel', params: { taskId: pickOwn(w) } }), id }),
          check: generation === 'v2' ? stdioResult : either(stdioResult, stdioError(-32602)),
        };
      }),
    },
    {
      weight: 1,
      arbitrary: fc.string({ minLength: 1, maxLength: 20 }).map((suffix): StdioCase => ({
        kind: 'notification',
        build: () => ({
          line: JSON.stringify({ jsonrpc: '2.0', method: `notifications/x-fuzz-${suffix}`, params: generation === 'v2' ? { _meta: META } : {} }),
        }),
        check: () => undefined,
      })),
    },
  ];
  if (generation === 'v2') {
    classes.push({
      weight: 2,
      arbitrary: fc
        .tuple(fc.string({ minLength: 1, maxLength: 60 }), responses)
        .map(([requestState, inputResponses]) =>
          request(
            'tools/call',
            { name: 'test_tool_with_task', arguments: {}, requestState, inputResponses },
            stdioError(-32602, { code: -32602, message: 'Invalid or expired requestState' }),
            'forged request state (MRTR)',
          ),
        ),
    });
  } else {
    // R51: without requestor identity (stdio) v1 tasks/list is not offered.
    classes.push({
      weight: 1,
      arbitrary: fc.string({ maxLength: 40 }).map((cursor) => request('tasks/list', { cursor }, stdioError(-32601), 'tasks/list without identity')),
    });
  }
  return fc.oneof(...classes).map(named);
}
