/**
 * The HTTP layer under generated raw requests (issue 23 item 6), over real loopback sockets against a real
 * `mcp-tasks serve` process (the default: no authentication, SQLite, the dashboard on): Content-Type (duplicated
 * too), `Accept`, `MCP-Protocol-Version`, `Mcp-Session-Id`, batches, chunked and broken framing, bodies shorter
 * than their `Content-Length`, invalid UTF-8, cut and oversized bodies, header bytes, requests trickled in pieces
 * (`http-layer-cases.ts`). Invariants:
 * - no answer is a 5xx, and every well-framed request gets an answer (no hang, no reset);
 * - the answer is the one the model predicts where it predicts one (415, 413, 400 `-32700`, 400 `-32600`, …);
 * - nothing refused runs: the canaries refused cases aim at (working and input_required tasks, the kill switch) end
 *   as they began, and a task-creating call left a task exactly when its answer said so;
 * - the server keeps answering, logs no error, exits cleanly; the store passes `checkStoreIntegrity`.
 *
 * `npm test` sends FUZZ_HTTP_REQUESTS (default 200, seconds); `npm run fuzz` sends 20,000. FUZZ_SEED changes
 * the seed. The counts (requests, statuses) are printed at the end.
 */
import { join } from 'node:path';

import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';

import { checkStoreIntegrity, sqliteSnapshot } from '../../src/testing/store-integrity.js';
import { type HttpAnswer, sendHttp, sendRawHttp } from '../helpers/raw-http.js';
import { bannerUrl } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { type BuiltCase, type LayerCase, layerCases, type LayerWorld, V1, V2 } from './http-layer-cases.js';
import { type ServeProcess, spawnServe } from './targets.js';

const TOTAL = Number(process.env.FUZZ_HTTP_REQUESTS ?? 200);
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_201);
/** Requests in flight at once (one property run). */
const BATCH = 20;
const ANSWER_TIMEOUT_MS = 20_000;
const META = {
  'io.modelcontextprotocol/protocolVersion': V2,
  'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } },
};

const temp = makeTempDir('mcp-tasks-http-fuzz-');
afterAll(() => temp.remove());

const statuses = new Map<number, number>();
const kinds = new Map<string, number>();
const expectations = new Map<string, number>();
const count = (map: Map<string | number, number>, key: string | number): void => void map.set(key, (map.get(key) ?? 0) + 1);

/** A valid request of either generation (the seeding and the liveness probe). */
function v2Post(port: number, method: string, params: Record<string, unknown>, name?: string): Promise<HttpAnswer> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': V2,
    'mcp-method': method,
    ...(name ? { 'mcp-name': name } : {}),
  };
  return sendHttp(
    port,
    { method: 'POST', path: '/mcp', headers, body: JSON.stringify({ jsonrpc: '2.0', id: `seed-${method}`, method, params: { ...params, _meta: META } }) },
    ANSWER_TIMEOUT_MS,
  );
}
function v1Post(port: number, session: string | undefined, message: Record<string, unknown>): Promise<HttpAnswer> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': V1,
    ...(session ? { 'mcp-session-id': session } : {}),
  };
  return sendHttp(port, { method: 'POST', path: '/mcp', headers, body: JSON.stringify(message) }, ANSWER_TIMEOUT_MS);
}

async function openSession(port: number): Promise<string> {
  const init = await v1Post(port, undefined, {
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: V1, capabilities: { elicitation: { form: {} } }, clientInfo: { name: 'http-fuzz', version: '1' } },
  });
  const session = init.headers['mcp-session-id'];
  if (typeof session !== 'string') throw new Error(`no session: ${init.status} ${init.text}`);
  await v1Post(port, session, { jsonrpc: '2.0', method: 'notifications/initialized' });
  return session;
}

/** Sessions, canaries (working and input_required tasks of both generations), disposable tasks, the dashboard's CSRF token. */
async function seedWorld(port: number, readStatus: (taskId: string) => string | undefined): Promise<LayerWorld> {
  const own = await openSession(port);
  const other = await openSession(port);
  const v2Task = async (name: string, args: object) => String((await v2Post(port, 'tools/call', { name, arguments: args }, name)).message?.result?.taskId);
  const v1Task = async (name: string, args: object) =>
    String(
      (
        (await v1Post(port, own, { jsonrpc: '2.0', id: `seed-${name}`, method: 'tools/call', params: { name, arguments: args, task: { ttl: 86_400_000 } } }))
          .message?.result?.task as { taskId: string }
      ).taskId,
    );
  const world: LayerWorld = {
    host: `127.0.0.1:${port}`,
    sessions: { own, other },
    canaries: { v1Working: [], v2Working: [], v1Input: [], v2Input: [] },
    disposable: { v1: [], v2: [] },
    csrf: '',
  };
  for (let i = 0; i < 3; i += 1) {
    world.canaries.v2Working.push(await v2Task('slow_compute', { seconds: 3000 }));
    world.canaries.v1Working.push(await v1Task('slow_compute', { seconds: 3000 }));
    world.disposable.v2.push(await v2Task('slow_compute', { seconds: 0 }));
    world.disposable.v1.push(await v1Task('slow_compute', { seconds: 0 }));
  }
  for (let i = 0; i < 2; i += 1) {
    world.canaries.v2Input.push(await v2Task('confirm_delete', { filename: `c${i}` }));
    world.canaries.v1Input.push(await v1Task('confirm_delete', { filename: `c${i}` }));
  }
  const session = await sendHttp(port, { method: 'GET', path: '/dashboard/api/session', headers: { host: world.host } }, ANSWER_TIMEOUT_MS);
  world.csrf = String((JSON.parse(session.text) as { csrf: string }).csrf);
  const deadline = Date.now() + 20_000;
  const all = [...world.canaries.v1Input, ...world.canaries.v2Input];
  while (!all.every((taskId) => readStatus(taskId) === 'input_required')) {
    if (Date.now() > deadline) throw new Error('the input canaries never asked');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return world;
}

/** Whether `answer` says the one task-creating call of `built` created a task. */
function created(built: BuiltCase, answer: HttpAnswer): boolean {
  const result = answer.message?.result;
  if (answer.status !== 200 || !result || built.creations.length !== 1) return false;
  return built.creations[0]?.generation === 'v2'
    ? typeof result.taskId === 'string'
    : typeof (result.task as { taskId?: unknown } | undefined)?.taskId === 'string';
}

/** The answer the model demands, or `undefined` when it holds. */
function problemOf(built: BuiltCase, answer: HttpAnswer): string | undefined {
  if (answer.status >= 500) return `HTTP ${answer.status}`;
  const code = answer.message?.error?.code;
  switch (built.expected) {
    case 'broken':
      return answer.status >= 200 && answer.status < 300 ? `a request that is not HTTP was answered ${answer.status}` : undefined;
    case 'unsupported':
      // The MCP endpoint answers JSON-RPC (-32000, the SDK's code); the admin API and the dashboard their own JSON.
      return answer.status === 415 && (built.route === 'admin' || built.route === 'dashboard' || code === -32000)
        ? undefined
        : `expected 415 (-32000), got ${answer.status} ${String(code)}`;
    case 'too_large':
      return answer.status === 413 ? undefined : `expected 413, got ${answer.status}`;
    case 'unparsable':
      return answer.status === 400 && code === -32700 ? undefined : `expected 400 -32700, got ${answer.status} ${String(code)}`;
    case 'batch':
      return answer.status === 400 && code === -32600 ? undefined : `expected 400 -32600, got ${answer.status} ${String(code)}`;
    case 'invalid_admin':
      return answer.status === 400 ? undefined : `expected 400 from the admin API, got ${answer.status}`;
    case 'open':
      return answer.status === 0 ? 'no answer (reset) to a well-framed request' : undefined;
  }
}

describe(`HTTP layer fuzz: ${TOTAL} generated raw requests (seed ${SEED}) against a real serve process`, () => {
  afterAll(() => {
    const sorted = (map: Map<string | number, number>) => [...map].sort((a, b) => b[1] - a[1]).map(([key, value]) => `  ${String(value).padStart(6)}  ${key}`);
    console.log(
      `HTTP-layer fuzz, seed ${SEED}: ${[...statuses.values()].reduce((a, b) => a + b, 0)} requests\n` +
        `statuses (0 = closed without an answer):\n${sorted(statuses).join('\n')}\nmodel:\n${sorted(expectations).join('\n')}\n${kinds.size} classes, the 15 most frequent:\n${sorted(kinds).slice(0, 15).join('\n')}`,
    );
  });

  it(
    'no 5xx, no hang, every answer as the model predicts, nothing refused runs, the server lives and the store is sound',
    async () => {
      const dbPath = join(temp.dir, 'tasks.db');
      // The default serve (no authentication, SQLite) with the dashboard on; tools on the event loop, since the
      // executor is not what is fuzzed here and worker threads make the canaries slow to start on a loaded machine.
      const server: ServeProcess = spawnServe([
        '--port',
        '0',
        '--data-dir',
        join(temp.dir, 'data'),
        '--store',
        dbPath,
        '--no-builtins',
        '--fixtures',
        'conformance',
        '--dashboard',
        '--log-level',
        'warn',
        '--drain-ms',
        '500',
        '--executor',
        'in-process',
      ]);
      let db: Database.Database | undefined;
      let exitCode: number | null = null;
      try {
        const port = Number(new URL(await bannerUrl(server.child, server.stderr, 30_000)).port);
        const started = Date.now();
        while ((await v2Post(port, 'tools/list', {}).catch(() => undefined))?.status !== 200) {
          if (!server.alive() || Date.now() - started > 30_000) throw new Error(`server did not start:\n${server.stderr()}`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        db = new Database(dbPath, { readonly: true });
        const statusStatement = db.prepare('SELECT status FROM tasks WHERE task_id = ?');
        const readStatus = (taskId: string) => (statusStatement.get(taskId) as { status: string } | undefined)?.status;
        const world = await seedWorld(port, readStatus);
        const canaries = [...world.canaries.v1Working, ...world.canaries.v2Working, ...world.canaries.v1Input, ...world.canaries.v2Input];
        const before = new Map(canaries.map((taskId) => [taskId, readStatus(taskId)]));
        const creations: Array<{ label: string; created: boolean; describe: string }> = [];
        let next = 0;
        await fc.assert(
          fc.asyncProperty(fc.array(layerCases, { minLength: BATCH, maxLength: BATCH }), async (cases: LayerCase[]) => {
            const failures = await Promise.all(
              cases.map(async (fuzzCase) => {
                const built = fuzzCase.build(world, (next += 1));
                count(kinds, fuzzCase.kind);
                count(expectations, built.expected);
                let answer: HttpAnswer;
                try {
                  answer = await sendRawHttp(port, built.request, ANSWER_TIMEOUT_MS);
                } catch (error) {
                  return `${String(error).split(':')[0]}: no answer within ${ANSWER_TIMEOUT_MS} ms (hang)\n  request: ${built.describe}`;
                }
                count(statuses, answer.status);
                for (const creation of built.creations)
                  creations.push({
                    label: creation.label,
                    created: created(built, answer),
                    describe: `answer ${answer.status} ${answer.text.slice(0, 300)}; request ${built.describe}`,
                  });
                const problem = problemOf(built, answer);
                return problem === undefined ? undefined : `${problem}: ${answer.text.slice(0, 200)}\n  request: ${built.describe}`;
              }),
            );
            const alive = await v2Post(port, 'tools/list', {});
            if (alive.status !== 200) failures.push(`tools/list after the run answered ${alive.status}`);
            if (!server.alive()) failures.push(`the server died:\n${server.stderr()}`);
            const found = failures.filter((failure) => failure !== undefined);
            if (found.length > 0) throw new Error(found.join('\n'));
          }),
          { seed: SEED, numRuns: Math.max(1, Math.ceil(TOTAL / BATCH)), endOnFailure: true },
        );

        // Nothing refused ran: the canaries are as they were, the kill switch never turned on, every task-creating
        // call left a task exactly when its answer said it did.
        expect(new Map(canaries.map((taskId) => [taskId, readStatus(taskId)]))).toEqual(before);
        expect(db.prepare('SELECT count(*) AS n FROM kill_switches').get()).toEqual({ n: 0 });
        const tasksByLabel = new Map<string, number>();
        for (const { label } of db.prepare("SELECT json_extract(arguments, '$.label') AS label FROM tasks").all() as Array<{ label: unknown }>) {
          if (typeof label === 'string') tasksByLabel.set(label, (tasksByLabel.get(label) ?? 0) + 1);
        }
        const wrong = creations.filter(({ label, created: answered }) => (tasksByLabel.get(label) ?? 0) !== (answered ? 1 : 0));
        expect(
          wrong.map(({ label, created: answered, describe }) => `${label}: answered ${answered ? 'created' : 'not created'}; ${describe.slice(0, 300)}`),
        ).toEqual([]);
        expect(creations.some((creation) => creation.created)).toBe(true);
        expect(creations.some((creation) => !creation.created)).toBe(true);
        expect(checkStoreIntegrity(await sqliteSnapshot(db)())).toEqual([]);
      } finally {
        db?.close();
        exitCode = await server.stop();
      }
      // After a passing run only, so that a failure above is what the report shows.
      expect(exitCode, server.stderr()).toBe(0);
      // pino levels: 50 error, 60 fatal. A request the HTTP layer refuses is no error of the server's.
      expect(
        server
          .stderr()
          .split('\n')
          .filter((line) => /"level":(50|60)/.test(line)),
      ).toEqual([]);
    },
    Math.max(120_000, TOTAL * 200),
  );
});
