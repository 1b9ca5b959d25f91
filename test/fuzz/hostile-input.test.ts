/**
 * Hostile input at scale (issue 10 §3): fast-check generates JSON-RPC messages and HTTP requests of every class in
 * `cases.ts` (malformed JSON, wrong types, huge and deep values, unknown methods, wrong headers and credentials,
 * forged cursors and request state, foreign and random task ids, and valid traffic in between) and sends them to a
 * real `mcp-tasks serve` process — over HTTP (2025-11-25 sessions and 2026-07-28 requests, two token-file
 * principals) and over stdio (one process per generation on the same store) — on SQLite and on PostgreSQL.
 * Every case must get its class's answer, never a 5xx, within the timeout; the server must still run; afterwards
 * the store must pass `checkStoreIntegrity`.
 *
 * `npm test` runs a fixed seed with FUZZ_MESSAGES (default 1,400) messages in all — with that seed every class of
 * every setup still occurs (the summary printed at the end counts them) — and `npm run test:long` and `npm run fuzz`
 * run 100,000 (vitest.config.ts). FUZZ_SEED changes the seed.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import Database from 'better-sqlite3';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';

import { checkStoreIntegrity, postgresSnapshot, type SnapshotSource, sqliteSnapshot } from '../../src/testing/store-integrity.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { type HttpAnswer, sendHttp } from '../helpers/raw-http.js';
import { bannerUrl } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { type Generation, type HttpCase, httpCases, type StdioCase, stdioCases, stdioLine, V1, v1Probe, v2Probe, type World } from './cases.js';
import { type ServeProcess, spawnServe, StdioPeer } from './targets.js';

const TOTAL = Number(process.env.FUZZ_MESSAGES ?? 1_400);
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_201);
/** Messages in flight at once (one property run). */
const BATCH = 25;
/** Longest any single answer may take (a hang otherwise). */
const ANSWER_TIMEOUT_MS = 15_000;
/** Share of TOTAL per setup. */
const SHARES = { 'HTTP on SQLite': 0.3, 'HTTP on PostgreSQL': 0.3, 'stdio on SQLite': 0.2, 'stdio on PostgreSQL': 0.2 } as const;
type Setup = keyof typeof SHARES;

/** Per-class counts of one setup, for the summary. */
const tallies = new Map<Setup, Map<string, number>>();
function tally(setup: Setup, kind: string): void {
  const counts = tallies.get(setup) ?? new Map<string, number>();
  counts.set(kind, (counts.get(kind) ?? 0) + 1);
  tallies.set(setup, counts);
}

function emptyWorld(): World {
  return {
    tokens: undefined,
    sessions: undefined,
    own: { v1: [], v2: [] },
    ownTerminal: { v1: [], v2: [] },
    foreign: { v1: [], v2: [] },
    cursors: undefined,
    requestStates: undefined,
  };
}

const temp = makeTempDir('mcp-tasks-fuzz-');
let database: TestDatabase | undefined;
afterAll(async () => {
  await database?.drop();
  temp.remove();
});

/** Where a setup's store lives, and how to read a snapshot of it afterwards. */
async function storeOf(
  backend: 'SQLite' | 'PostgreSQL',
  name: string,
): Promise<{ args: string[]; snapshot(): Promise<{ source: SnapshotSource; close(): Promise<void> }> }> {
  if (backend === 'SQLite') {
    const path = join(temp.dir, `${name}.db`);
    return {
      args: ['--store', path],
      async snapshot() {
        const db = new Database(path, { readonly: true });
        return {
          source: sqliteSnapshot(db),
          close: async () => {
            db.close();
          },
        };
      },
    };
  }
  database ??= await createTestDatabase();
  const url = database.url;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('DROP SCHEMA IF EXISTS mcp_tasks CASCADE');
  await client.end();
  return {
    args: ['--store', url],
    async snapshot() {
      const reader = new pg.Client({ connectionString: url });
      await reader.connect();
      return { source: postgresSnapshot(reader), close: () => reader.end() };
    },
  };
}

async function expectIntegrity(store: Awaited<ReturnType<typeof storeOf>>): Promise<number> {
  const { source, close } = await store.snapshot();
  try {
    const snapshot = await source();
    expect(checkStoreIntegrity(snapshot)).toEqual([]);
    return snapshot.tasks.length;
  } finally {
    await close();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// HTTP

async function waitForHttp(port: number, server: ServeProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (!server.alive()) throw new Error(`server exited at start:\n${server.stderr()}`);
    try {
      const answer = await sendHttp(port, { method: 'POST', path: '/mcp', headers: { 'content-type': 'application/json' }, body: '{}' }, 2000);
      if (answer.status === 401) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`server did not start:\n${server.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Open a 2025-11-25 session with `token`; its id. */
async function openSession(port: number, token: string): Promise<string> {
  const initialize = await sendHttp(
    port,
    {
      method: 'POST',
      path: '/mcp',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: V1, capabilities: { elicitation: { form: {} } }, clientInfo: { name: 'fuzz', version: '1' } },
      }),
    },
    ANSWER_TIMEOUT_MS,
  );
  const session = initialize.headers['mcp-session-id'];
  if (typeof session !== 'string') throw new Error(`no session: ${initialize.status} ${initialize.text}`);
  await sendHttp(
    port,
    {
      method: 'POST',
      path: '/mcp',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': V1,
        'mcp-session-id': session,
        authorization: `Bearer ${token}`,
      },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    },
    ANSWER_TIMEOUT_MS,
  );
  return session;
}

/** Tasks, sessions, cursors and request state for A and B, made with valid requests before the fuzzing starts. */
async function seedHttpWorld(port: number, tokens: { a: string; b: string }): Promise<World> {
  const world: World = { ...emptyWorld(), tokens };
  world.sessions = { a: await openSession(port, tokens.a), b: await openSession(port, tokens.b) };
  const as = (who: 'a' | 'b'): World => ({
    ...world,
    tokens: { a: tokens[who], b: tokens[who] },
    sessions: { a: world.sessions![who], b: world.sessions![who] },
  });
  const send = async (probe: ReturnType<typeof v2Probe>): Promise<HttpAnswer> => sendHttp(port, probe, ANSWER_TIMEOUT_MS);
  for (const who of ['a', 'b'] as const) {
    const pool = who === 'a' ? world.own : world.foreign;
    // More than one list page (50) of v1 tasks, so that a real cursor exists.
    for (let i = 0; i < 52; i += 1) {
      const created = await send(
        v1Probe(as(who), `seed-${who}-${i}`, { method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 0 }, task: { ttl: 600_000 } } }),
      );
      pool.v1.push(String((created.message?.result?.task as { taskId: string }).taskId));
    }
    for (let i = 0; i < 5; i += 1) {
      const created = await send(
        v2Probe(as(who), `seed2-${who}-${i}`, {
          method: 'tools/call',
          params: { name: i < 3 ? 'slow_compute' : 'confirm_delete', arguments: i < 3 ? { seconds: 0 } : { filename: 'x.txt' } },
        }),
      );
      pool.v2.push(String(created.message?.result?.taskId));
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 300));
  world.ownTerminal.v1 = world.own.v1.slice(0, 40);
  const cursorOf = async (who: 'a' | 'b') =>
    String((await send(v1Probe(as(who), `list-${who}`, { method: 'tasks/list', params: {} }))).message?.result?.nextCursor);
  world.cursors = { a: await cursorOf('a'), b: await cursorOf('b') };
  const stateOf = async (who: 'a' | 'b') =>
    String(
      (await send(v2Probe(as(who), `mrtr-${who}`, { method: 'tools/call', params: { name: 'test_tool_with_task', arguments: {} } }))).message?.result
        ?.requestState,
    );
  world.requestStates = { a: await stateOf('a'), b: await stateOf('b') };
  for (const value of [world.cursors.a, world.cursors.b, world.requestStates.a, world.requestStates.b]) expect(value).not.toBe('undefined');
  return world;
}

async function fuzzHttp(setup: Setup, backend: 'SQLite' | 'PostgreSQL'): Promise<void> {
  const store = await storeOf(backend, `http-${backend}`);
  const tokens = { a: `fuzz-a-${randomBytes(12).toString('hex')}`, b: `fuzz-b-${randomBytes(12).toString('hex')}` };
  const tokenFile = join(temp.dir, `tokens-${backend}.json`);
  writeFileSync(
    tokenFile,
    JSON.stringify({
      tokens: [
        { token: tokens.a, issuer: 'https://fuzz', subject: 'a', tenant: 't' },
        { token: tokens.b, issuer: 'https://fuzz', subject: 'b', tenant: 't' },
      ],
    }),
  );
  const server = spawnServe([
    '--port',
    '0',
    '--data-dir',
    join(temp.dir, `data-http-${backend}`),
    '--auth',
    `tokens:${tokenFile}`,
    '--no-builtins',
    '--fixtures',
    'conformance',
    '--log-level',
    'fatal',
    ...store.args,
  ]);
  try {
    const port = Number(new URL(await bannerUrl(server.child, server.stderr, 30_000)).port);
    await waitForHttp(port, server);
    const world = await seedHttpWorld(port, tokens);
    let next = 0;
    const runs = Math.max(1, Math.round((TOTAL * SHARES[setup]) / BATCH));
    await fc.assert(
      fc.asyncProperty(fc.array(httpCases(true), { minLength: BATCH, maxLength: BATCH }), async (cases: HttpCase[]) => {
        const failures = await Promise.all(
          cases.map(async (fuzzCase) => {
            tally(setup, fuzzCase.kind);
            const probe = fuzzCase.build(world, `f-${(next += 1)}`);
            const answer = await sendHttp(port, probe, ANSWER_TIMEOUT_MS);
            const problem =
              answer.status >= 500
                ? `HTTP ${answer.status}: ${answer.text.slice(0, 300)}`
                : answer.reset && fuzzCase.kind !== 'huge task id (header too large)'
                  ? 'connection reset without an answer'
                  : fuzzCase.check(answer);
            if (problem === undefined) fuzzCase.learn?.(world, answer);
            return problem === undefined
              ? undefined
              : `[${fuzzCase.kind}] ${problem}\n  request: ${probe.method} ${probe.path} ${JSON.stringify(probe.headers)} ${String(probe.body ?? '').slice(0, 300)}`;
          }),
        );
        const found = failures.filter((failure) => failure !== undefined);
        if (found.length > 0) throw new Error(found.join('\n'));
        if (!server.alive()) throw new Error(`the server died:\n${server.stderr()}`);
      }),
      { seed: SEED + (backend === 'SQLite' ? 0 : 1), numRuns: runs, endOnFailure: true },
    );
    expect(server.alive()).toBe(true);
  } finally {
    const code = await server.stop();
    expect(code, server.stderr()).toBe(0);
  }
  expect(await expectIntegrity(store)).toBeGreaterThan(100);
}

// ---------------------------------------------------------------------------------------------------------------
// stdio

async function initializeV1(peer: StdioPeer): Promise<void> {
  const answer = await peer.request(
    'init',
    JSON.stringify({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: V1, capabilities: { elicitation: { form: {} } }, clientInfo: { name: 'fuzz', version: '1' } },
    }),
    ANSWER_TIMEOUT_MS,
  );
  expect((answer.result as { protocolVersion?: string }).protocolVersion).toBe(V1);
  peer.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
}

async function fuzzStdio(setup: Setup, backend: 'SQLite' | 'PostgreSQL'): Promise<void> {
  const store = await storeOf(backend, `stdio-${backend}`);
  const world = emptyWorld();
  const peers: Partial<Record<Generation, { server: ServeProcess; peer: StdioPeer }>> = {};
  try {
    for (const generation of ['v1', 'v2'] as const) {
      const server = spawnServe(
        [
          '--stdio',
          '--data-dir',
          join(temp.dir, `data-stdio-${backend}-${generation}`),
          '--no-builtins',
          '--fixtures',
          'conformance',
          '--log-level',
          'fatal',
          ...store.args,
        ],
        {},
        'pipe',
      );
      const peer = new StdioPeer(server);
      peers[generation] = { server, peer };
      if (generation === 'v1') await initializeV1(peer);
      for (let i = 0; i < 5; i += 1) {
        const params =
          generation === 'v1' ? { name: 'slow_compute', arguments: { seconds: 0 }, task: {} } : { name: 'slow_compute', arguments: { seconds: 0 } };
        const answer = await peer.request(`seed-${i}`, stdioLine(generation, `seed-${i}`, { method: 'tools/call', params }), ANSWER_TIMEOUT_MS);
        const result = answer.result as { taskId?: string; task?: { taskId: string } };
        world.own[generation].push(String(generation === 'v1' ? result.task?.taskId : result.taskId));
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    world.ownTerminal.v1 = [...world.own.v1];
    for (const generation of ['v1', 'v2'] as const) {
      const { server, peer } = peers[generation] as { server: ServeProcess; peer: StdioPeer };
      let next = 0;
      let expectedNullIds = 0;
      const runs = Math.max(1, Math.round((TOTAL * SHARES[setup]) / 2 / BATCH));
      await fc.assert(
        fc.asyncProperty(fc.array(stdioCases(generation), { minLength: BATCH, maxLength: BATCH }), async (cases: StdioCase[]) => {
          const failures = await Promise.all(
            cases.map(async (fuzzCase) => {
              tally(setup, `${generation} ${fuzzCase.kind}`);
              const { line, id } = fuzzCase.build(world, `f-${generation}-${(next += 1)}`);
              expectedNullIds += fuzzCase.nullIdAnswers ?? 0;
              let answer: Record<string, unknown> | undefined;
              if (id === undefined) peer.write(line);
              else answer = await peer.request(id, line, ANSWER_TIMEOUT_MS);
              const problem = fuzzCase.check(answer);
              if (problem === undefined && answer) fuzzCase.learn?.(world, answer);
              return problem === undefined ? undefined : `[${generation} ${fuzzCase.kind}] ${problem}\n  line: ${line.slice(0, 300)}`;
            }),
          );
          // The connection still answers after whatever the batch held (e.g. lines skipped as stray output).
          const probe = `alive-${generation}-${(next += 1)}`;
          const alive = await peer.request(probe, stdioLine(generation, probe, { method: 'tools/list', params: {} }), ANSWER_TIMEOUT_MS);
          if (!('result' in alive)) failures.push(`tools/list after the batch failed: ${JSON.stringify(alive)}`);
          const found = failures.filter((failure) => failure !== undefined);
          if (found.length > 0) throw new Error(found.join('\n'));
          if (!server.alive()) throw new Error(`the server died:\n${server.stderr()}`);
        }),
        { seed: SEED + (backend === 'SQLite' ? 10 : 11) + (generation === 'v1' ? 0 : 100), numRuns: runs, endOnFailure: true },
      );
      // Every JSON line that was no JSON-RPC message got exactly one -32600 with id null; nothing but MCP on stdout.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(peer.nullIdAnswers.length).toBe(expectedNullIds);
      expect(peer.nullIdAnswers.every((answer) => (answer.error as { code?: number }).code === -32600)).toBe(true);
      expect(peer.junk).toEqual([]);
    }
  } finally {
    for (const entry of Object.values(peers)) {
      const code = await entry.server.stop();
      expect(code, entry.server.stderr()).toBe(0);
    }
  }
  expect(await expectIntegrity(store)).toBeGreaterThan(10);
}

// ---------------------------------------------------------------------------------------------------------------

describe(`hostile input: ${TOTAL} generated messages (seed ${SEED}), both transports and generations, then a store integrity check`, () => {
  afterAll(() => {
    const lines: string[] = [];
    let all = 0;
    for (const [setup, counts] of tallies) {
      const total = [...counts.values()].reduce((sum, count) => sum + count, 0);
      all += total;
      lines.push(`${setup}: ${total} messages in ${counts.size} classes`);
      for (const [kind, count] of [...counts].sort((a, b) => b[1] - a[1])) lines.push(`  ${String(count).padStart(6)}  ${kind}`);
    }
    console.log(`hostile-input fuzz, seed ${SEED}: ${all} messages\n${lines.join('\n')}`);
    // The size is small enough that a class could go missing from one setup: each class of a transport must have
    // reached both of its backends (when both ran).
    for (const [sqlite, postgres] of [
      ['HTTP on SQLite', 'HTTP on PostgreSQL'],
      ['stdio on SQLite', 'stdio on PostgreSQL'],
    ] as const) {
      const [a, b] = [tallies.get(sqlite), tallies.get(postgres)];
      if (a && b) expect([...b.keys()].sort(), `classes of ${postgres} against ${sqlite}`).toEqual([...a.keys()].sort());
    }
  });

  const timeout = Math.max(120_000, TOTAL * 40);
  it('HTTP on SQLite: every class gets its answer, no 5xx, no hang; the server lives; the store is sound', () => fuzzHttp('HTTP on SQLite', 'SQLite'), timeout);
  it(
    'HTTP on PostgreSQL: every class gets its answer, no 5xx, no hang; the server lives; the store is sound',
    () => fuzzHttp('HTTP on PostgreSQL', 'PostgreSQL'),
    timeout,
  );
  it(
    'stdio on SQLite (a v1 and a v2 process on one store): every request answered as its class requires; the store is sound',
    () => fuzzStdio('stdio on SQLite', 'SQLite'),
    timeout,
  );
  it(
    'stdio on PostgreSQL (a v1 and a v2 process on one store): every request answered as its class requires; the store is sound',
    () => fuzzStdio('stdio on PostgreSQL', 'PostgreSQL'),
    timeout,
  );
});
