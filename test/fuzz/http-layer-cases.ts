/**
 * Generated requests for the HTTP-layer fuzzer (issue 23 item 6), as fast-check arbitraries: raw HTTP/1.1 bytes
 * for the MCP endpoint (both generations), the 2025-11-25 elicitation reply, the admin API and the dashboard's
 * cancel action, varying what the JSON-RPC fuzzer (`cases.ts`) keeps fixed — Content-Type (duplicated too),
 * `Accept`, `MCP-Protocol-Version`, `Mcp-Session-Id`, batches, chunked and broken framing, bodies shorter than their
 * `Content-Length`, invalid UTF-8, cut JSON, oversized bodies, headers with obs-text or control bytes, requests
 * trickled in pieces.
 *
 * Each case carries the outcome a hand-written model of the HTTP layer predicts from the dimensions alone
 * ({@link Expected}): `broken` (the framing is not HTTP: Node's parser refuses, or the body never completes),
 * `unsupported` (415), `too_large` (413), `unparsable` (400 -32700), `batch` (400 -32600), `invalid_admin` (400
 * from the admin API) or `open` (anything but a 5xx). The fuzzer checks the answer against it, and the store against
 * the answers: a refused case targets the canaries (tasks that must stay as they are), a task-creating call leaves a
 * task exactly when its answer says it was created.
 */
import fc from 'fast-check';

import type { RawRequest } from '../helpers/raw-http.js';

export const V1 = '2025-11-25';
export const V2 = '2026-07-28';

/** Content types the SDK's rule (and so the server) accepts: the media type `application/json`, parameters ignored. */
export const ACCEPTED_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'Application/JSON',
  'APPLICATION/JSON;charset="UTF-8"',
  'application/json;',
  'application/json ; charset=latin1',
];
/** Content types that must get 415: the CORS-safelisted ones, none, look-alikes, lists. */
export const REFUSED_TYPES = [
  'text/plain',
  'text/plain;charset=UTF-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=----fz',
  '',
  'application/jsonx',
  'application/vnd.api+json',
  'text/plain; a=application/json',
  'application/json, text/plain',
  '*/*',
  'text/json',
  'application/json-seq',
];
const ACCEPTS = ['application/json, text/event-stream', 'text/event-stream, application/json', '*/*', 'application/json', 'text/event-stream', 'text/html'];

/** What exists on the server before the fuzzing starts (anonymous owner: the default `serve`). */
export interface LayerWorld {
  host: string;
  /** Two 2025-11-25 sessions of the owner (one declares elicitation). */
  sessions: { own: string; other: string };
  /** Tasks refused cases aim at: they must end as they began. */
  canaries: { v1Working: string[]; v2Working: string[]; v1Input: string[]; v2Input: string[] };
  /** Tasks accepted cases may change. */
  disposable: { v1: string[]; v2: string[] };
  /** The dashboard's CSRF token (authentication off: one per process). */
  csrf: string;
}

/** The outcome the model predicts. */
export type Expected = 'broken' | 'unsupported' | 'too_large' | 'unparsable' | 'batch' | 'invalid_admin' | 'open';

/** A task-creating call inside a case: `label` finds its task in the store. */
export interface Creation {
  label: string;
  generation: 'v1' | 'v2';
}

/** One request, built against the world. */
export interface BuiltCase {
  route: Route;
  request: RawRequest;
  expected: Expected;
  creations: Creation[];
  /** The canaries a refused case aims at (they must not change, whatever the answer). */
  aims: string[];
  /** Describes the case in a failure. */
  describe: string;
}

export interface LayerCase {
  /** Class for the tallies. */
  kind: string;
  build(world: LayerWorld, n: number): BuiltCase;
}

/** Where a case goes: the MCP endpoint (by generation), the v1 elicitation reply, the admin API, the dashboard. */
export type Route = 'v2' | 'v1' | 'reply' | 'admin' | 'dashboard';
type Op = 'create' | 'cancel' | 'get' | 'list' | 'update' | 'notify';
type Framing = 'length' | 'chunked' | 'chunked-bad' | 'truncated' | 'cl+te' | 'dup-cl' | 'no-length';
type Mutation = 'none' | 'utf8-in-string' | 'utf8-anywhere' | 'cut';

interface Dimensions {
  route: Route;
  ops: Op[];
  batch: boolean;
  contentType: { first: string | undefined; second?: string };
  accept: string | undefined | [string, string];
  version: 'right' | 'absent' | 'other' | 'bogus' | 'empty' | 'duplicate';
  session: 'own' | 'other' | 'unknown' | 'empty' | 'absent' | 'duplicate' | 'obs-text';
  framing: Framing;
  mutation: Mutation;
  /** Bytes of padding in the arguments (0, some, or over the route's limit). */
  pad: number;
  extraHeader: 'none' | 'obs-text' | 'control';
  close: boolean;
  cuts: number[];
  pauseMs: number;
  seed: number;
}

/**
 * Framing that is not HTTP: Node's parser refuses it (a bad chunk, Content-Length with Transfer-Encoding, two
 * Content-Lengths), the body never completes (`truncated`), or — a body without Content-Length or Transfer-Encoding
 * is no body (RFC 9112 §6.3) — the bytes after the head are a second request that is garbage (`no-length`).
 */
const BROKEN_FRAMING: readonly Framing[] = ['chunked-bad', 'truncated', 'cl+te', 'dup-cl', 'no-length'];
/** Body limits of the routes (bytes): `--max-request-body-bytes` default, admin API, dashboard. */
const LIMITS: Record<Route, number> = { v2: 4 * 1024 * 1024, v1: 4 * 1024 * 1024, reply: 4 * 1024 * 1024, admin: 16 * 1024, dashboard: 64 * 1024 };

const pick = <T>(list: readonly T[], index: number): T => list[index % list.length] as T;

/** The model: what the HTTP layer must answer, from the dimensions alone (first failing check wins). */
function expectedOf(d: Dimensions, bodyBytes: number): Expected {
  if (BROKEN_FRAMING.includes(d.framing) || d.extraHeader === 'control') return 'broken';
  const type = d.contentType.first;
  const json = type !== undefined && ACCEPTED_TYPES.includes(type);
  if (!json) return 'unsupported';
  if (bodyBytes > LIMITS[d.route]) return 'too_large';
  if (d.route === 'admin') return 'invalid_admin';
  if (d.mutation === 'cut') return d.route === 'dashboard' ? 'open' : 'unparsable';
  if (d.mutation === 'utf8-anywhere') return 'open';
  if (d.batch && d.route !== 'dashboard') return 'batch';
  return 'open';
}

/** `bytes` with `junk` inserted at `at`. */
function insert(bytes: Buffer, at: number, junk: Buffer): Buffer {
  return Buffer.concat([bytes.subarray(0, at), junk, bytes.subarray(at)]);
}

/** Invalid UTF-8: a lone continuation byte, a truncated sequence, an overlong form, a surrogate, 0xFF. */
const BAD_UTF8 = [
  Buffer.from([0x80]),
  Buffer.from([0xc3]),
  Buffer.from([0xe2, 0x82]),
  Buffer.from([0xc0, 0xaf]),
  Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0xff, 0xfe]),
];

/** The JSON-RPC message of one op, its MCP headers, and the creation it makes. */
function messageOf(
  d: Dimensions,
  op: Op,
  world: LayerWorld,
  n: number,
  index: number,
  refused: boolean,
  aims: string[],
): { message: Record<string, unknown>; method: string; name?: string; creation?: Creation } {
  const meta = {
    'io.modelcontextprotocol/protocolVersion': V2,
    'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } },
  };
  const v2 = d.route === 'v2';
  const id = `fz-${n}-${index}`;
  const aim = (pool: string[], fallback: string[]): string => {
    const chosen = refused ? pick(pool, d.seed + index) : pick(fallback, d.seed + index);
    if (refused) aims.push(chosen);
    return chosen;
  };
  const note = 'note-NOTE';
  if (op === 'create') {
    const label = `fz${n}x${index}`;
    const args = { seconds: 0, label, note, ...(d.pad > 0 ? { pad: 'p'.repeat(d.pad) } : {}) };
    // The longest TTL (24 h, clamped): the store is read after the run, and a long run outlives a short TTL.
    const params = v2 ? { name: 'slow_compute', arguments: args, _meta: meta } : { name: 'slow_compute', arguments: args, task: { ttl: 86_400_000 } };
    return {
      message: { jsonrpc: '2.0', id, method: 'tools/call', params },
      method: 'tools/call',
      name: 'slow_compute',
      creation: { label, generation: v2 ? 'v2' : 'v1' },
    };
  }
  if (op === 'cancel' || op === 'get') {
    const taskId = v2 ? aim(world.canaries.v2Working, world.disposable.v2) : aim(world.canaries.v1Working, world.disposable.v1);
    const method = `tasks/${op}`;
    return { message: { jsonrpc: '2.0', id, method, params: v2 ? { taskId, _meta: meta, note } : { taskId } }, method, name: taskId };
  }
  if (op === 'update' && v2) {
    const taskId = aim(world.canaries.v2Input, world.disposable.v2);
    return {
      message: {
        jsonrpc: '2.0',
        id,
        method: 'tasks/update',
        params: { taskId, inputResponses: { 'input-1': { action: 'accept', content: { confirm: true } } }, _meta: meta },
      },
      method: 'tasks/update',
      name: taskId,
    };
  }
  if (op === 'list' && !v2) return { message: { jsonrpc: '2.0', id, method: 'tasks/list', params: {} }, method: 'tasks/list' };
  if (op === 'notify')
    return {
      message: { jsonrpc: '2.0', method: 'notifications/roots/list_changed', params: v2 ? { _meta: meta } : {} },
      method: 'notifications/roots/list_changed',
    };
  return { message: { jsonrpc: '2.0', id, method: 'tools/list', params: v2 ? { _meta: meta } : {} }, method: 'tools/list' };
}

/** The body (before framing) and the headers of a case, per route. */
function bodyAndHeaders(
  d: Dimensions,
  world: LayerWorld,
  n: number,
  refused: boolean,
  aims: string[],
): { path: string; method: string; body: Buffer; headers: Array<[string, string | Buffer]>; creations: Creation[] } {
  const headers: Array<[string, string | Buffer]> = [['Host', world.host]];
  const creations: Creation[] = [];
  if (d.route === 'admin') {
    // Never a tool the server has: an accepted change would be 400, a refused one 415 — the switch never turns on.
    const change = { tool: `no_such_tool_${n}`, reason: 'fuzz', note: 'note-NOTE', ...(d.pad > 0 ? { pad: 'p'.repeat(d.pad) } : {}) };
    return { path: '/admin/kill-switch', method: 'PUT', body: Buffer.from(JSON.stringify(d.batch ? [change] : change)), headers, creations };
  }
  if (d.route === 'dashboard') {
    const taskId = refused ? pick(world.canaries.v2Working, d.seed) : pick(world.disposable.v2, d.seed);
    if (refused) aims.push(taskId);
    headers.push(['Origin', `http://${world.host}`], ['X-CSRF-Token', world.csrf]);
    const payload = { note: 'note-NOTE', ...(d.pad > 0 ? { pad: 'p'.repeat(d.pad) } : {}) };
    return {
      path: `/dashboard/api/tasks/${taskId}/cancel`,
      method: 'POST',
      body: Buffer.from(JSON.stringify(d.batch ? [payload] : payload)),
      headers,
      creations,
    };
  }
  let messages: Array<Record<string, unknown>>;
  let mcp: { method: string; name?: string } = { method: 'tools/list' };
  if (d.route === 'reply') {
    const taskId = refused ? pick(world.canaries.v1Input, d.seed) : `unknown${n}`;
    if (refused) aims.push(taskId);
    const reply = { jsonrpc: '2.0', id: `mcp-tasks-input/${taskId}/input-1`, result: { action: 'accept', content: { confirm: true }, note: 'note-NOTE' } };
    messages = d.batch ? [reply, { ...reply, id: `mcp-tasks-input/${taskId}/input-2` }] : [reply];
  } else {
    const built = (d.batch ? d.ops : d.ops.slice(0, 1)).map((op, index) => messageOf(d, op, world, n, index, refused, aims));
    for (const entry of built) if (entry.creation) creations.push(entry.creation);
    messages = built.map((entry) => entry.message);
    mcp = built[0] as { method: string; name?: string };
  }
  if (d.route === 'v2') {
    headers.push(['Mcp-Method', mcp.method]);
    if (mcp.name !== undefined) headers.push(['Mcp-Name', mcp.name]);
  }
  const version = d.route === 'v2' ? V2 : V1;
  const other = d.route === 'v2' ? V1 : V2;
  const versions = { right: [version], absent: [], other: [other], bogus: ['2099-01-01'], empty: [''], duplicate: [version, version] }[d.version];
  for (const value of versions) headers.push(['MCP-Protocol-Version', value]);
  if (d.route !== 'v2' || d.session !== 'absent') {
    const sessions = {
      own: [world.sessions.own],
      other: [world.sessions.other],
      unknown: ['no-such-session'],
      empty: [''],
      absent: [],
      duplicate: [world.sessions.own, world.sessions.own],
      'obs-text': [Buffer.from([0x73, 0xff, 0xe9, 0x80])],
    }[d.session];
    // 2026-07-28 requests carry no session normally; a session id on one must be ignored (B12).
    for (const value of d.route === 'v2' && d.session === 'own' ? [world.sessions.own] : sessions) headers.push(['Mcp-Session-Id', value]);
  }
  const body = Buffer.from(JSON.stringify(d.batch ? messages : messages[0]));
  return { path: '/mcp', method: 'POST', body, headers, creations };
}

/** Frame `body` after `head` lines as `framing` asks; the bytes of the whole request. */
function frame(d: Dimensions, startLine: string, headers: Array<[string, string | Buffer]>, body: Buffer): Buffer {
  const lines: Array<[string, string | Buffer]> = [...headers];
  if (d.framing === 'length') lines.push(['Content-Length', String(body.length)]);
  if (d.framing === 'truncated') lines.push(['Content-Length', String(body.length + 1 + (d.seed % 100))]);
  if (d.framing === 'dup-cl') lines.push(['Content-Length', String(body.length)], ['Content-Length', String(body.length + 1)]);
  if (d.framing === 'chunked' || d.framing === 'chunked-bad') lines.push(['Transfer-Encoding', 'chunked']);
  if (d.framing === 'cl+te') lines.push(['Content-Length', String(body.length)], ['Transfer-Encoding', 'chunked']);
  if (d.close) lines.push(['Connection', 'close']);
  if (d.extraHeader === 'obs-text') lines.push(['X-Fuzz', Buffer.from([0x61, 0xe9, 0xff, 0x80, 0x62])]);
  if (d.extraHeader === 'control') lines.push(['X-Fuzz', Buffer.from([0x61, 0x01, 0x62])]);
  const head = Buffer.concat([
    Buffer.from(`${startLine}\r\n`),
    ...lines.map(([name, value]) =>
      Buffer.concat([Buffer.from(`${name}: `), Buffer.isBuffer(value) ? value : Buffer.from(value, 'latin1'), Buffer.from('\r\n')]),
    ),
    Buffer.from('\r\n'),
  ]);
  if (d.framing === 'chunked' || d.framing === 'chunked-bad' || d.framing === 'cl+te') {
    const chunks: Buffer[] = [];
    let at = 0;
    for (const [index, cut] of [...d.cuts, body.length].entries()) {
      const end = Math.max(at, Math.min(body.length, cut));
      if (end > at || index === d.cuts.length) {
        const part = body.subarray(at, end);
        if (part.length > 0) chunks.push(Buffer.from(`${part.length.toString(16)}${index % 2 === 1 ? ';ext=1' : ''}\r\n`), part, Buffer.from('\r\n'));
        at = end;
      }
    }
    // Broken: a size that is no hex number, or a chunk whose size overstates its bytes.
    if (d.framing === 'chunked-bad') chunks.unshift(d.seed % 2 === 0 ? Buffer.from('zz\r\nabc\r\n') : Buffer.from('ff\r\nshort\r\n'));
    chunks.push(Buffer.from('0\r\n\r\n'));
    return Buffer.concat([head, ...chunks]);
  }
  return Buffer.concat([head, body]);
}

const dimensions: fc.Arbitrary<Dimensions> = fc.record({
  route: fc.oneof(
    { weight: 5, arbitrary: fc.constant<Route>('v2') },
    { weight: 5, arbitrary: fc.constant<Route>('v1') },
    { weight: 1, arbitrary: fc.constant<Route>('reply') },
    { weight: 1, arbitrary: fc.constant<Route>('admin') },
    { weight: 1, arbitrary: fc.constant<Route>('dashboard') },
  ),
  ops: fc.array(
    fc.oneof(
      { weight: 4, arbitrary: fc.constant<Op>('create') },
      { weight: 3, arbitrary: fc.constant<Op>('cancel') },
      fc.constantFrom<Op>('get', 'list', 'update', 'notify'),
    ),
    { minLength: 1, maxLength: 3 },
  ),
  batch: fc.nat({ max: 7 }).map((roll) => roll === 0),
  contentType: fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...ACCEPTED_TYPES).map((first) => ({ first })) },
    { weight: 4, arbitrary: fc.constantFrom(...REFUSED_TYPES).map((first) => ({ first })) },
    { weight: 1, arbitrary: fc.constant({ first: undefined }) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom(...ACCEPTED_TYPES, ...REFUSED_TYPES), fc.constantFrom(...ACCEPTED_TYPES, ...REFUSED_TYPES))
        .map(([first, second]) => ({ first, second })),
    },
  ),
  accept: fc.oneof(
    { weight: 6, arbitrary: fc.constant<string | undefined | [string, string]>('application/json, text/event-stream') },
    fc.constantFrom<string | undefined | [string, string]>(...ACCEPTS, undefined, ['application/json', 'text/event-stream']),
  ),
  version: fc.oneof(
    { weight: 6, arbitrary: fc.constant<Dimensions['version']>('right') },
    fc.constantFrom<Dimensions['version']>('absent', 'other', 'bogus', 'empty', 'duplicate'),
  ),
  session: fc.oneof(
    { weight: 6, arbitrary: fc.constant<Dimensions['session']>('own') },
    fc.constantFrom<Dimensions['session']>('other', 'unknown', 'empty', 'absent', 'duplicate', 'obs-text'),
  ),
  framing: fc.oneof(
    { weight: 8, arbitrary: fc.constant<Framing>('length') },
    { weight: 3, arbitrary: fc.constant<Framing>('chunked') },
    fc.constantFrom<Framing>('chunked-bad', 'truncated', 'cl+te', 'dup-cl', 'no-length'),
  ),
  mutation: fc.oneof({ weight: 8, arbitrary: fc.constant<Mutation>('none') }, fc.constantFrom<Mutation>('utf8-in-string', 'utf8-anywhere', 'cut')),
  pad: fc.oneof(
    { weight: 40, arbitrary: fc.constant(0) },
    { weight: 8, arbitrary: fc.integer({ min: 1, max: 100_000 }) },
    { weight: 1, arbitrary: fc.integer({ min: 4 * 1024 * 1024, max: 4 * 1024 * 1024 + 4096 }) },
  ),
  extraHeader: fc.oneof(
    { weight: 10, arbitrary: fc.constant<Dimensions['extraHeader']>('none') },
    fc.constantFrom<Dimensions['extraHeader']>('obs-text', 'control'),
  ),
  close: fc.boolean(),
  cuts: fc.array(fc.nat({ max: 400 }), { maxLength: 4 }).map((cuts) => [...cuts].sort((a, b) => a - b)),
  pauseMs: fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, fc.integer({ min: 1, max: 5 })),
  seed: fc.nat(),
});

/**
 * Keep the admin API's cases about the HTTP layer: `PUT /admin/kill-switch` with a key the mutation renamed reads as
 * `{}`, which turns the global switch on — its documented meaning, not a refusal of the HTTP layer.
 */
function normalized(d: Dimensions): Dimensions {
  return d.route === 'admin' && d.mutation === 'utf8-anywhere' ? { ...d, mutation: 'utf8-in-string' } : d;
}

/** Every generated case: dimensions, built into bytes against the world when sent. */
export const layerCases: fc.Arbitrary<LayerCase> = dimensions.map(normalized).map((d) => {
  const type = d.contentType.first === undefined ? 'no type' : ACCEPTED_TYPES.includes(d.contentType.first) ? 'JSON type' : 'non-JSON type';
  const kind = `${d.route} ${d.batch ? 'batch' : 'single'}, ${type}, ${d.framing}${d.mutation === 'none' ? '' : `, ${d.mutation}`}`;
  const fuzzCase: LayerCase = {
    kind,
    build(world, n) {
      // A case the model refuses aims at the canaries; one it may accept aims at tasks that may change.
      const refused = expectedOf(d, 0) !== 'open';
      const aims: string[] = [];
      const built = bodyAndHeaders(d, world, n, refused, aims);
      let body = built.body;
      // Inside a string value that nothing reads (the messages without a note stay as they are).
      if (d.mutation === 'utf8-in-string' && body.includes('NOTE')) body = insert(body, body.indexOf('NOTE'), pick(BAD_UTF8, d.seed));
      if (d.mutation === 'utf8-anywhere') {
        // Anywhere but on the way to a label (the `arguments` key, the `label` key, the label itself: the store is
        // asked for those) — where it lands decides the answer.
        const guarded = built.creations.map((creation) => [body.indexOf('"arguments"'), body.indexOf(creation.label) + creation.label.length + 1] as const);
        let at = d.seed % (body.length + 1);
        if (guarded.some(([from, to]) => from >= 0 && at >= from && at <= to)) at = 0;
        body = insert(body, at, pick(BAD_UTF8, d.seed >> 3));
      }
      // At least one byte: an empty body is another case (`no-length`).
      if (d.mutation === 'cut') body = body.subarray(0, 1 + (d.seed % Math.max(1, body.length - 1)));
      const headers = [...built.headers];
      if (d.contentType.first !== undefined) headers.push(['Content-Type', d.contentType.first]);
      if (d.contentType.second !== undefined) headers.push(['Content-Type', d.contentType.second]);
      if (Array.isArray(d.accept)) for (const value of d.accept) headers.push(['Accept', value]);
      else if (d.accept !== undefined) headers.push(['Accept', d.accept]);
      const bytes = frame(d, `${built.method} ${built.path} HTTP/1.1`, headers, body);
      const cuts = [...new Set(d.cuts.map((cut) => (cut * 7919 + d.seed) % Math.max(1, bytes.length)))].sort((a, b) => a - b);
      const pieces: Buffer[] = [];
      let at = 0;
      for (const cut of [...cuts, bytes.length]) {
        if (cut > at) pieces.push(bytes.subarray(at, cut));
        at = Math.max(at, cut);
      }
      const expected = expectedOf(d, body.length);
      return {
        route: d.route,
        // Broken framing may leave the server waiting for bytes that never come (a chunk larger than what follows,
        // a short body): our side ends after the last piece, as a client that gave up would.
        request: { pieces, pauseMs: d.pauseMs, halfClose: BROKEN_FRAMING.includes(d.framing) },
        expected,
        creations: built.creations,
        aims,
        describe: `${kind} (expected ${expected}): ${bytes.subarray(0, 600).toString('latin1')}`,
      };
    },
  };
  return Object.assign(fuzzCase, { [fc.toStringMethod]: () => kind });
});
