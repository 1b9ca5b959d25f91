/**
 * Hard gate (issue 10 §0, briefing rule 7 "no tool can read the server's own state"): with the configuration of
 * `npm start` — the current directory is a tool root and the data directory `./data` (store, WAL/SHM, the HMAC
 * secret) lies inside it — no tool call over HTTP returns any piece of the secret, of the token file, or of
 * another owner's tasks, however the path is spelt (the data directory itself, `..`, a symlink to the directory or
 * to one file, a hard link, globs over the whole root) and whichever tool is asked (analyze_logs, audit_repository,
 * cleanup_logs, which must not delete it either). Every answer is scanned: results (text and structuredContent),
 * statusMessage of every poll, errors, elicitation messages. Negative controls prove the detector sees a leak
 * when the same bytes are readable (copies outside the data directory; the exclusion left out of the library
 * options, which no CLI flag can do).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connectTasksClient, type InputRequest } from '../../src/client/index.js';
import { serverStatePaths } from '../../src/core/confinement.js';
import { createTasksServer } from '../../src/server/create-tasks-server.js';
import { loadServerSecret } from '../../src/server/signing-key.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { builtinTools } from '../../src/tools/index.js';
import { type Leak, LeakDetector } from '../helpers/leak-detector.js';
import { bannerUrl } from '../helpers/server-process.js';
import { DECLARING, postModern } from '../helpers/wire.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** A fresh project directory (real path) for a server to run in, removed by `remove`; with `logs/app.log` if asked. */
function makeProject(prefix: string, withLog = false): { dir: string; remove(): void } {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), `${prefix}-`)));
  if (withLog) {
    mkdirSync(join(dir, 'logs'));
    writeFileSync(join(dir, 'logs', 'app.log'), '2024-05-01T10:00:00Z INFO service started\n2024-05-01T10:00:01Z WARN disk 91% full\n');
  }
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Every response body a client received, raw, labelled by what was asked. */
class Answers {
  readonly all: Array<{ label: string; body: Buffer }> = [];
  add(label: string, body: Buffer): void {
    this.all.push({ label, body });
  }
  leaks(detector: LeakDetector): Leak[] {
    return this.all.flatMap((answer) => detector.scan(answer.label, answer.body));
  }
}

type Json = Record<string, unknown>;

/**
 * POST one 2026-07-28 request; the raw body is recorded; returns the JSON-RPC response. The Tasks Extension is
 * declared for `tasks/*` and when `declareTasks` (a `tools/call` then creates a task).
 */
async function post(
  url: string,
  answers: Answers,
  label: string,
  method: string,
  params: Json,
  options: { token?: string; declareTasks?: boolean } = {},
): Promise<Json> {
  const response = await postModern(url, method, params, {
    capabilities: (options.declareTasks ?? method.startsWith('tasks/')) ? DECLARING : {},
    ...(options.token ? { token: options.token } : {}),
    onBody: (body, status) => answers.add(`${label} → HTTP ${status}`, body),
  });
  return response.body;
}

/** A tool call answered inline, then the same call as a task polled to its end; returns every final result. */
async function callBothWays(url: string, answers: Answers, tool: string, args: Json, token?: string): Promise<Json[]> {
  const label = `${tool} ${JSON.stringify(args)}`;
  const inline = await post(url, answers, `${label} inline`, 'tools/call', { name: tool, arguments: args }, { token });
  const created = await post(url, answers, `${label} as task`, 'tools/call', { name: tool, arguments: args }, { token, declareTasks: true });
  const results = [inline.result as Json];
  const task = created.result as Json | undefined;
  if (task?.resultType === 'task') {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const got = (await post(url, answers, `${label} tasks/get`, 'tasks/get', { taskId: task.taskId }, { token })).result as Json;
      if (TERMINAL.has(String(got.status))) {
        results.push(got.result as Json);
        break;
      }
      if (Date.now() > deadline) throw new Error(`${label}: task still ${String(got.status)}`);
      await new Promise((wake) => setTimeout(wake, 25));
    }
  } else {
    results.push(task as Json);
  }
  return results;
}

/** File names of the server's state and of the links to it planted in the roots: no report may name one. */
const STATE_NAMES =
  /(^|\/)(secret|tasks\.db(-wal|-shm|-journal)?|tokens\.json|secret\.log|hard-secret\.log|store\.log|tokens\.log)$|(^|\/)data-link(\/|$)|^data\//;

/** Paths a structured tool report lists (files it read or would delete). */
function reportedPaths(result: Json | undefined): string[] {
  const report = (result?.structuredContent ?? {}) as Json;
  const lists = ['perFile', 'largestFiles', 'secrets', 'failedFiles', 'candidates', 'deleted', 'skipped'].flatMap((key) =>
    Array.isArray(report[key]) ? (report[key] as Json[]) : [],
  );
  return lists.map((entry) => String(entry.path));
}

/** A real `mcp-tasks serve` (the built CLI) started in `cwd` exactly as `npm start` does, plus `args`. */
interface CliServer {
  url: string;
  child: ChildProcess;
  stderr(): string;
  stop(): Promise<void>;
}

async function startCli(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliServer> {
  const cleanEnv = { ...process.env, ...env };
  if (!('MCP_TASKS_SECRET' in env)) delete cleanEnv.MCP_TASKS_SECRET;
  if (!('MCP_TASKS_STORE' in env)) delete cleanEnv.MCP_TASKS_STORE;
  const child = spawn(process.execPath, [MAIN, 'serve', '--port', '0', '--log-level', 'info', ...args], {
    cwd,
    env: cleanEnv,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  const deadline = Date.now() + 20_000;
  while (!/auth: /.test(stderr)) {
    if (child.exitCode !== null) throw new Error(`server exited early (${child.exitCode}):\n${stderr}`);
    if (Date.now() > deadline) throw new Error(`server did not start:\n${stderr}`);
    await new Promise((wake) => setTimeout(wake, 25));
  }
  return {
    url: await bannerUrl(child, () => stderr),
    child,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The server secret as the detector protects it: its raw bytes and the line stored in `<data>/secret`. */
function protectSecret(detector: LeakDetector, dataDir: string): void {
  const stored = readFileSync(join(dataDir, 'secret'), 'utf8');
  expect(stored.trim().length).toBeGreaterThanOrEqual(43);
  detector.protect('server secret', Buffer.from(stored.trim(), 'base64url'), stored);
}

/** Links into the server state planted inside the root: to the directory, to single files, and a hard link. */
function plantLinks(project: string, tokenFile?: string): void {
  const logs = join(project, 'logs');
  symlinkSync(join(project, 'data'), join(logs, 'data-link'));
  symlinkSync(join(project, 'data', 'secret'), join(logs, 'secret.log'));
  symlinkSync(join(project, 'data', 'tasks.db'), join(logs, 'store.log'));
  linkSync(join(project, 'data', 'secret'), join(logs, 'hard-secret.log'));
  if (tokenFile) symlinkSync(tokenFile, join(logs, 'tokens.log'));
}

/** Every spelling of "read the server state" for analyze_logs and audit_repository, with `root` as the tool root. */
function attacks(root: string, withTokenFile: boolean): Array<[tool: string, args: Json]> {
  const data = join(root, 'data');
  const logs = join(root, 'logs');
  const list: Array<[string, Json]> = [
    // Exactly the attack of the issue, and the store pages.
    ['analyze_logs', { path: data, include: 'secret' }],
    ['analyze_logs', { path: data, include: 'tasks.db*', top: 1000 }],
    ['analyze_logs', { path: data, include: '**', top: 1000 }],
    ...['secret', 'tasks.db', 'tasks.db-wal', 'tasks.db-shm'].map((file): [string, Json] => [
      'analyze_logs',
      { path: join(data, file), include: '*', top: 1000 },
    ]),
    // The root that contains the data directory, with globs that match the state files.
    ['analyze_logs', { path: root, include: '**', top: 1000 }],
    ['analyze_logs', { path: root, include: 'secret' }],
    ['analyze_logs', { path: root, include: 'tasks.db*', top: 1000 }],
    // `..` segments.
    ['analyze_logs', { path: `${logs}/../data`, include: '**', top: 1000 }],
    ['analyze_logs', { path: `${logs}/../data/secret`, include: '*' }],
    ['analyze_logs', { path: `${logs}/../../${root.split('/').pop() ?? ''}/data/tasks.db-wal`, include: '*', top: 1000 }],
    // Symlinks to the directory and to single files, and a hard link to the secret.
    ['analyze_logs', { path: join(logs, 'data-link'), include: '**', top: 1000 }],
    ['analyze_logs', { path: join(logs, 'data-link', 'secret'), include: '*' }],
    ['analyze_logs', { path: join(logs, 'secret.log') }],
    ['analyze_logs', { path: join(logs, 'store.log'), top: 1000 }],
    ['analyze_logs', { path: join(logs, 'hard-secret.log') }],
    ['analyze_logs', { path: logs, include: '**', top: 1000 }],
    // audit_repository reads every text file of a tree.
    ['audit_repository', { path: root }],
    ['audit_repository', { path: data }],
    ['audit_repository', { path: join(logs, 'data-link') }],
    ['audit_repository', { path: logs }],
  ];
  if (withTokenFile) {
    list.push(
      ['analyze_logs', { path: join(root, 'tokens.json'), include: '*' }],
      ['analyze_logs', { path: root, include: 'tokens.json' }],
      ['analyze_logs', { path: join(logs, 'tokens.log') }],
    );
  }
  return list;
}

/** Runs every attack both ways; checks that no report lists a state file. Returns nothing: answers are recorded. */
async function runAttacks(url: string, answers: Answers, root: string, withTokenFile: boolean, token?: string): Promise<void> {
  for (const [tool, args] of attacks(root, withTokenFile)) {
    for (const result of await callBothWays(url, answers, tool, args, token)) {
      expect(result, `${tool} ${JSON.stringify(args)}`).toBeDefined();
      expect(
        reportedPaths(result).filter((path) => STATE_NAMES.test(path)),
        `${tool} ${JSON.stringify(args)}`,
      ).toEqual([]);
    }
  }
}

function assertStateIntact(project: string, tokenFile?: string): void {
  for (const file of ['secret', 'tasks.db', 'tasks.db-wal', 'tasks.db-shm']) expect(existsSync(join(project, 'data', file)), file).toBe(true);
  if (tokenFile) expect(existsSync(tokenFile)).toBe(true);
}

describe('hard gate: `npm start` defaults (cwd is a root, ./data inside it, anonymous owner)', () => {
  let project: { dir: string; remove(): void };
  let server: CliServer;
  const answers = new Answers();
  const detector = new LeakDetector();

  beforeAll(async () => {
    project = makeProject('gate-defaults', true);
    server = await startCli(project.dir, []);
    // A task in the store, so that its pages hold task ids and results.
    await callBothWays(server.url, new Answers(), 'analyze_logs', { path: join(project.dir, 'logs') });
    plantLinks(project.dir);
    protectSecret(detector, join(project.dir, 'data'));
  });
  afterAll(async () => {
    await server?.stop();
    project?.remove();
  });

  it('starts with the defaults and says at start that the data directory is denied and excluded from the cwd root', () => {
    const banner = server.stderr();
    expect(banner).toContain(`roots:    ${project.dir}`);
    expect(banner).toContain(`denied:   ${join(project.dir, 'data')} (data directory, excluded from root ${project.dir})`);
    expect(banner).toMatch(/"msg":"server state is denied to tools and excluded from every root"/);
    assertStateIntact(project.dir);
  });

  it('no spelling of the data directory, its files or links to them returns a piece of the secret (analyze_logs, audit_repository; inline and as tasks)', async () => {
    await runAttacks(server.url, answers, project.dir, false);
    expect(answers.all.length).toBeGreaterThan(40);
    expect(answers.leaks(detector)).toEqual([]);
    // The log is an answer too (to whoever reads it).
    expect(detector.scan('server log', server.stderr())).toEqual([]);
    assertStateIntact(project.dir);
  });

  it('the exact attack is refused with a tool error naming the reason, not an empty scan', async () => {
    const [inline] = await callBothWays(server.url, new Answers(), 'analyze_logs', { path: join(project.dir, 'data'), include: 'secret' });
    expect(inline).toMatchObject({ isError: true, content: [{ type: 'text', text: expect.stringMatching(/denied to tools/) }] });
  });

  it('negative control: a copy of the secret outside the data directory IS found by the same scan and detector', async () => {
    const copies = join(project.dir, 'logs', 'copies');
    mkdirSync(copies);
    copyFileSync(join(project.dir, 'data', 'secret'), join(copies, 'secret-copy'));
    const control = new Answers();
    await callBothWays(server.url, control, 'analyze_logs', { path: copies, include: '*' });
    expect(control.leaks(detector).map((leak) => leak.label)).toContain('server secret');
    rmSync(copies, { recursive: true });
  });
});

describe('hard gate with --auth (token file inside the root) and --writable-root: owner B never sees owner A, the secret or a token', () => {
  let project: { dir: string; remove(): void };
  let server: CliServer;
  let tokenFile: string;
  const tokenA = randomBytes(24).toString('base64url');
  const tokenB = randomBytes(24).toString('base64url');
  const markerA = randomBytes(12).toString('base64url');
  const tasksOfA: string[] = [];
  const answers = new Answers();
  const detector = new LeakDetector();

  beforeAll(async () => {
    project = makeProject('gate-auth', true);
    tokenFile = join(project.dir, 'tokens.json');
    writeFileSync(
      tokenFile,
      JSON.stringify({
        tokens: [
          { token: tokenA, issuer: 'https://issuer.gate.test', subject: 'alice', tenant: 'acme' },
          { token: tokenB, issuer: 'https://issuer.gate.test', subject: 'bob', tenant: 'acme' },
        ],
      }),
    );
    server = await startCli(project.dir, ['--auth', 'tokens:tokens.json', '--writable-root', '.']);
    // Owner A's tasks: their ids and arguments (a marker no file in the roots contains) live only in the store.
    for (let i = 0; i < 3; i++) {
      const created = await post(
        server.url,
        new Answers(),
        'A creates',
        'tools/call',
        { name: 'analyze_logs', arguments: { path: join(project.dir, 'logs'), include: `*.${markerA}-${i}` } },
        { token: tokenA, declareTasks: true },
      );
      const taskId = String((created.result as Json).taskId);
      tasksOfA.push(taskId);
      detector.protectTaskId(`task id of owner A #${i}`, taskId);
    }
    for (const taskId of tasksOfA) {
      for (let status = ''; !TERMINAL.has(status); await new Promise((wake) => setTimeout(wake, 25))) {
        status = String(((await post(server.url, new Answers(), 'A polls', 'tasks/get', { taskId }, { token: tokenA })).result as Json).status);
      }
    }
    plantLinks(project.dir, tokenFile);
    protectSecret(detector, join(project.dir, 'data'));
    detector.protectText('argument marker of owner A', markerA).protectText('token of A', tokenA).protectText('token of B', tokenB);
  });
  afterAll(async () => {
    await server?.stop();
    project?.remove();
  });

  it('logs the data directory and the token file as denied and excluded from the read and the writable root', () => {
    const banner = server.stderr();
    expect(banner).toContain(`denied:   ${join(project.dir, 'data')} (data directory, excluded from root ${project.dir})`);
    expect(banner).toContain(`${tokenFile} (token file, excluded from root ${project.dir})`);
  });

  it("owner B's calls on the data directory, the token file and every link to them return no piece of A's task ids or arguments, the secret or a token", async () => {
    await runAttacks(server.url, answers, project.dir, true, tokenB);
    expect(detector.size).toBe(7);
    expect(answers.leaks(detector)).toEqual([]);
    // The log is read by the operator, not by B; still, neither the secret nor a token may be in it.
    expect(detector.scan('server log', server.stderr()).filter((leak) => leak.label === 'server secret' || leak.label.startsWith('token'))).toEqual([]);
  });

  it('cleanup_logs cannot delete the store, the secret or the token file, whatever the path or glob', async () => {
    const asked: InputRequest[] = [];
    const client = await connectTasksClient({
      url: server.url,
      protocol: '2026-07-28',
      journal: false,
      token: tokenB,
      onInput: (request) => {
        asked.push(request);
        return { action: 'accept', content: { confirm: true } };
      },
    });
    const outcomes: unknown[] = [];
    try {
      for (const path of [join(project.dir, 'data'), join(project.dir, 'logs', 'data-link'), join(project.dir, 'data', 'tasks.db-wal'), tokenFile]) {
        const outcome = await client.callTool('cleanup_logs', { path, include: '**', olderThanDays: 0 });
        outcomes.push(outcome);
        expect(outcome, path).toMatchObject({ kind: 'result', result: { isError: true, content: [{ text: expect.stringMatching(/denied to tools/) }] } });
      }
      // The whole writable root with a glob matching everything: the state is not even listed.
      const created = await client.callTool('cleanup_logs', { path: project.dir, include: '**', olderThanDays: 0 });
      if (created.kind !== 'task') throw new Error('cleanup_logs must run as a task');
      const result = await client.resume(created.taskId);
      outcomes.push(result);
      expect(result.structuredContent).toMatchObject({ decision: 'confirmed' });
      expect(reportedPaths(result as unknown as Json).length).toBeGreaterThan(0);
      expect(reportedPaths(result as unknown as Json).filter((path) => STATE_NAMES.test(path.slice(project.dir.length + 1)))).toEqual([]);
      expect(existsSync(join(project.dir, 'logs', 'app.log'))).toBe(false);
    } finally {
      await client.close();
    }
    assertStateIntact(project.dir, tokenFile);
    const seen = Buffer.from(JSON.stringify({ outcomes, asked }));
    expect(detector.scan('cleanup_logs outcomes and questions', seen)).toEqual([]);
    // The store still serves owner A.
    const got = await post(server.url, new Answers(), 'A after cleanup', 'tasks/get', { taskId: tasksOfA[0] }, { token: tokenA });
    expect((got.result as Json).status).toBe('completed');
  });

  it("negative control: B's scan of copies of the store and secret outside the data directory DOES show A's task ids and the secret", async () => {
    const copies = join(project.dir, 'logs', 'copies');
    mkdirSync(copies, { recursive: true });
    for (const file of ['secret', 'tasks.db', 'tasks.db-wal']) copyFileSync(join(project.dir, 'data', file), join(copies, file));
    // The store file is binary, which the log tools never mine (issue 9 §2), so a text export of its rows (what a
    // backup dump or a debug log would hold) carries the task ids to the scan here.
    const db = new Database(join(project.dir, 'data', 'tasks.db'), { readonly: true });
    const rows = db.prepare('SELECT task_id, owner_key, arguments FROM tasks').all() as Array<Record<string, string>>;
    db.close();
    writeFileSync(join(copies, 'tasks.dump'), rows.map((row) => `${row.task_id} ${row.owner_key} ${row.arguments}`).join('\n') + '\n');
    const control = new Answers();
    await callBothWays(server.url, control, 'analyze_logs', { path: copies, include: '*', top: 1000 }, tokenB);
    const labels = new Set(control.leaks(detector).map((leak) => leak.label));
    expect(labels).toContain('server secret');
    expect([...labels].some((label) => label.startsWith('task id of owner A'))).toBe(true);
    rmSync(copies, { recursive: true });
  });
});

describe('hard gate: roots equal to or inside the data directory', () => {
  const serveOnce = (cwd: string, args: string[]) =>
    spawnSync(process.execPath, [MAIN, 'serve', '--port', '0', ...args], { cwd, encoding: 'utf8', timeout: 20_000 });

  it('the CLI refuses --root and --writable-root at or inside the data directory or at the token file (exit 64, nothing served)', () => {
    const project = makeProject('gate-refuse');
    try {
      mkdirSync(join(project.dir, 'data', 'sub'), { recursive: true });
      writeFileSync(join(project.dir, 'tokens.json'), JSON.stringify({ tokens: [{ token: 'a-long-enough-token-1', issuer: 'i', subject: 's', tenant: 't' }] }));
      symlinkSync(join(project.dir, 'data'), join(project.dir, 'data-alias'));
      for (const args of [
        ['--root', 'data'],
        ['--root', './data/sub'],
        ['--root', 'data-alias'],
        ['--root', 'elsewhere/../data'],
        ['--writable-root', 'data'],
        ['--root', '.', '--writable-root', 'data/sub'],
        ['--auth', 'tokens:tokens.json', '--root', 'tokens.json'],
      ]) {
        const result = serveOnce(project.dir, args);
        expect(result.status, args.join(' ')).toBe(64);
        expect(result.stderr, args.join(' ')).toMatch(/lies inside the (data directory|token file) .*, which tools may never/);
      }
    } finally {
      project.remove();
    }
  });

  it('a default root (cwd) that is the data directory itself is left out and said so; the tools cannot reach it', async () => {
    const project = makeProject('gate-cwd-is-data');
    const server = await startCli(project.dir, ['--data-dir', '.']);
    try {
      expect(server.stderr()).toContain(`skipped:  ${project.dir} (inside the data directory)`);
      const answers = new Answers();
      const [inline] = await callBothWays(server.url, answers, 'analyze_logs', { path: project.dir, include: '**' });
      expect(inline).toMatchObject({ isError: true });
      const detector = new LeakDetector();
      protectSecret(detector, project.dir);
      expect(answers.leaks(detector)).toEqual([]);
    } finally {
      await server.stop();
      project.remove();
    }
  });

  it('a store outside the data directory (MCP_TASKS_STORE) and its WAL/SHM are denied too', async () => {
    const project = makeProject('gate-store-elsewhere');
    mkdirSync(join(project.dir, 'db'));
    const server = await startCli(project.dir, [], { MCP_TASKS_STORE: join(project.dir, 'db', 'tasks.db') });
    try {
      const answers = new Answers();
      const [own] = await callBothWays(server.url, answers, 'analyze_logs', { path: project.dir });
      expect(own).toMatchObject({ structuredContent: { path: project.dir } });
      for (const file of ['tasks.db', 'tasks.db-wal', 'tasks.db-shm']) expect(existsSync(join(project.dir, 'db', file)), file).toBe(true);
      const [dir] = await callBothWays(server.url, answers, 'analyze_logs', { path: join(project.dir, 'db'), include: '**' });
      expect(dir).toMatchObject({ structuredContent: { files: 0, perFile: [] } });
      for (const file of ['tasks.db', 'tasks.db-wal', 'tasks.db-shm']) {
        const [single] = await callBothWays(server.url, answers, 'analyze_logs', { path: join(project.dir, 'db', file), include: '*' });
        expect(single, file).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(/denied to tools/) }] });
      }
    } finally {
      await server.stop();
      project.remove();
    }
  });

  /** The library server (no CLI) over real HTTP, with the built-in tools reading `roots`. */
  async function libraryServer(dataDir: string, roots: string[], deniedPaths: string[]) {
    const store = openSqliteTaskStore({ path: join(dataDir, 'tasks.db') });
    const server = await createTasksServer({ tools: builtinTools({ roots }), store, secret: loadServerSecret(dataDir, {}), roots, deniedPaths });
    const http = createServer((request, response) => void server.handleHttp(request, response));
    await new Promise<void>((resolveListen) => http.listen(0, '127.0.0.1', resolveListen));
    return {
      url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
      async close() {
        http.closeAllConnections();
        await new Promise<void>((resolveClose) => http.close(() => resolveClose()));
        await server.close();
        await store.close();
      },
    };
  }

  it.each([
    ['equal to the data directory', ''],
    ['inside the data directory', 'sub'],
  ])('a root %s (library API with the denied paths serve derives) is refused by the path checks themselves', async (_name, below) => {
    const project = makeProject('gate-root-in-data');
    try {
      const dataDir = join(project.dir, 'data');
      mkdirSync(join(dataDir, 'sub'), { recursive: true });
      symlinkSync(join(dataDir, 'secret'), join(dataDir, 'sub', 'secret.log'));
      writeFileSync(join(dataDir, 'sub', 'app.log'), '2024-05-01T10:00:00Z INFO inside\n');
      const root = join(dataDir, below);
      const denied = serverStatePaths({ dataDir }).map((state) => state.path);
      const running = await libraryServer(dataDir, [root], denied);
      const answers = new Answers();
      const detector = new LeakDetector();
      try {
        protectSecret(detector, dataDir);
        for (const args of [
          { path: root, include: '**', top: 1000 },
          { path: join(dataDir, 'sub', 'secret.log') },
          { path: join(root, 'secret'), include: '*' },
          { path: `${join(dataDir, 'sub')}/../tasks.db-wal`, include: '*' },
        ]) {
          for (const result of await callBothWays(running.url, answers, 'analyze_logs', args))
            expect(result, JSON.stringify(args)).toMatchObject({ isError: true });
        }
        for (const result of await callBothWays(running.url, answers, 'audit_repository', { path: root })) expect(result).toMatchObject({ isError: true });
        expect(answers.leaks(detector)).toEqual([]);
      } finally {
        await running.close();
      }
      // Negative control: the same server and attack without the denied paths (possible only through the library
      // options, never a CLI flag) leaks the secret, so the detector above would have seen it.
      if (below === '') {
        const exposed = await libraryServer(dataDir, [root], []);
        try {
          const control = new Answers();
          await callBothWays(exposed.url, control, 'analyze_logs', { path: root, include: 'secret' });
          expect(control.leaks(detector).map((leak) => leak.label)).toContain('server secret');
        } finally {
          await exposed.close();
        }
      }
    } finally {
      project.remove();
    }
  });
});
