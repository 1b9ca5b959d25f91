/**
 * Issue 11 acceptance 3, the chaos run: CHAOS_TASKS tasks (default 400) — idempotent, step-journaled and
 * non-idempotent tools, a third each — while the test kill -9s a process that runs tools CHAOS_KILLS times (default
 * 4) at random moments and restarts it. On PostgreSQL: one `serve --no-worker` + a stable worker + the killed worker.
 * On SQLite: two `serve` processes (each with its embedded worker) on one file, the second one killed. Afterwards,
 * exactly as the issue lists: every task id the clients received is terminal and none is lost; idempotent and
 * journaled tasks completed; a non-idempotent task that completed has exactly one side-effect line, one that failed
 * (`interrupted`) at most one, none ever two; a journaled step whose result was recorded never ran again.
 * `npm test` runs the defaults; `npm run test:long` (and `npm run chaos:soak`) 10,000 tasks and 30 kills.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import type { TaskStore } from '../../src/core/store.js';
import { openPostgresTaskStore } from '../../src/store/postgres/index.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { ensureBuilt } from '../cli/support.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { type ServerProcess, startServerProcess, startWorkerProcess, type WorkerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { postModern } from '../helpers/wire.js';

const TOOLS = resolve(import.meta.dirname, '../fixtures/chaos-tools.mjs');
const TASKS = Number(process.env.CHAOS_TASKS ?? 400);
const KILLS = Number(process.env.CHAOS_KILLS ?? 4);
/** Each test's time: the kills, then the tasks draining (a soak run's 10,000 tasks take minutes). */
const TIMEOUT_MS = Math.max(300_000, TASKS * 60);
const CREATORS = 16;
const SECRET = 'chaos-run-secret-0123456789abcdef0123';
const TOOL_NAMES = ['chaos_idempotent', 'chaos_journaled', 'chaos_once'] as const;
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** Anything that runs tools and can be killed and started again. */
interface Killable {
  pid(): number | undefined;
  kill9(): Promise<void>;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function lines(path: string): string[] {
  try {
    return readFileSync(path, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/** Create TASKS tasks through `url` with CREATORS concurrent clients; returns the id and tool of each. */
async function createAll(url: string, dir: string): Promise<Array<{ taskId: string; tool: (typeof TOOL_NAMES)[number] }>> {
  const created: Array<{ taskId: string; tool: (typeof TOOL_NAMES)[number] }> = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: CREATORS }, async () => {
      for (let i = next++; i < TASKS; i = next++) {
        const tool = TOOL_NAMES[i % 3] as (typeof TOOL_NAMES)[number];
        const answer = await postModern(url, 'tools/call', { name: tool, arguments: { dir, ms: 15 + (i % 7) * 10 } });
        const taskId = answer.body.result?.taskId;
        if (typeof taskId !== 'string') throw new Error(`create ${i} failed: ${JSON.stringify(answer.body)}`);
        created.push({ taskId, tool });
      }
    }),
  );
  return created;
}

/** kill -9 `victim` KILLS times at random moments (50–600 ms apart), restarting it after each. */
async function killRepeatedly(victim: Killable, log: string[]): Promise<void> {
  for (let kill = 0; kill < KILLS; kill += 1) {
    await pause(50 + Math.floor(Math.random() * 550));
    log.push(`kill ${kill + 1}: pid ${victim.pid()}`);
    await victim.kill9();
    await victim.restart();
  }
}

async function runChaos(url: string, observer: TaskStore, victim: Killable, dir: string): Promise<void> {
  const kills: string[] = [];
  const [created] = await Promise.all([createAll(url, dir), killRepeatedly(victim, kills)]);
  expect(kills).toHaveLength(KILLS);
  expect(created).toHaveLength(TASKS);
  const deadline = Date.now() + Math.max(180_000, TASKS * 30);
  const final = new Map<string, Awaited<ReturnType<TaskStore['getUnscoped']>>>();
  for (const { taskId } of created) {
    for (;;) {
      const row = await observer.getUnscoped(taskId);
      // None lost: every id a client received has its row until it is terminal (TTLs outlast the run).
      expect(row, `task ${taskId}`).toBeDefined();
      if (row && TERMINAL.has(row.status)) {
        final.set(taskId, row);
        break;
      }
      if (Date.now() > deadline) throw new Error(`task ${taskId} still ${row?.status} after the run`);
      await pause(50);
    }
  }
  const effects = new Map<string, number>();
  for (const line of lines(join(dir, 'effects.log'))) effects.set(line.split(' ')[1] as string, (effects.get(line.split(' ')[1] as string) ?? 0) + 1);
  const stepRuns = new Map<string, string[]>();
  for (const line of lines(join(dir, 'steps.log'))) {
    const [, taskId, name, runId] = line.split(' ');
    const key = `${taskId} ${name}`;
    stepRuns.set(key, [...(stepRuns.get(key) ?? []), runId as string]);
  }
  const tally: Record<string, number> = {};
  for (const { taskId, tool } of created) {
    const row = final.get(taskId)!;
    const stored = JSON.stringify((await observer.getOutcome(taskId)) ?? null);
    const reason = /"reason":"([a-z_]+)"/.exec(stored)?.[1];
    const outcome = `${tool} ${row.status}${row.status === 'failed' ? ` ${reason ?? stored}` : ''}`;
    tally[outcome] = (tally[outcome] ?? 0) + 1;
    if (tool === 'chaos_once') {
      const count = effects.get(taskId) ?? 0;
      expect(count, `side effects of ${taskId} (${row.status})`).toBeLessThanOrEqual(1);
      if (row.status === 'completed') expect(count, `side effects of completed ${taskId}`).toBe(1);
      else {
        expect(row.status, `non-idempotent ${taskId}`).toBe('failed');
        expect(reason, `failure of ${taskId}: ${stored}`).toBe('interrupted');
      }
      continue;
    }
    expect(row.status, `${tool} ${taskId}: ${stored}`).toBe('completed');
    if (tool === 'chaos_journaled') {
      const outcome = await observer.getOutcome(taskId);
      const went = JSON.parse(outcome?.kind === 'result' ? String((outcome.result.content as Array<{ text?: string }>)[0]?.text) : 'null') as Record<
        string,
        string
      >;
      for (const name of ['a', 'b', 'c']) {
        // The run that completed went on with what the journal holds (a run that lost its task records nothing).
        expect(went[name], `step ${name} of ${taskId}: the completed run's value`).toBe((await observer.getStep(taskId, name))?.value);
        const runs = stepRuns.get(`${taskId} ${name}`) ?? [];
        const recorded = (await observer.getStep(taskId, name))?.value;
        expect(typeof recorded, `step ${name} of ${taskId} recorded`).toBe('string');
        // The recorded execution is the last one: a recorded step never ran again.
        expect(runs.at(-1), `step ${name} of ${taskId} ran after its result was recorded`).toBe(recorded);
      }
    }
  }
  console.log(`chaos run: ${TASKS} tasks, ${KILLS} kill -9: ${JSON.stringify(tally)}`);
}

function workerKillable(start: () => Promise<WorkerProcess | ServerProcess>): Killable & { ready: Promise<void> } {
  let current: WorkerProcess | ServerProcess | undefined;
  const killable = {
    ready: start().then((started) => void (current = started)),
    pid: () => current?.child.pid,
    kill9: async () => current?.kill9(),
    restart: async () => void (current = await start()),
    stop: async () => void (await current?.stop()),
  };
  return killable;
}

describe(`chaos: ${TASKS} tasks while a tool-running process is killed -9 ${KILLS} times`, () => {
  const temp = makeTempDir('mcp-tasks-chaos-');
  const cleanup: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
    temp.remove();
  });
  const common = ['--no-builtins', '--tools', TOOLS, '--lease-ms', '1000', '--max-attempts', '20', '--concurrency', '16'];
  const env = { MCP_TASKS_SECRET: SECRET };

  it(
    'PostgreSQL: serve --no-worker + a stable worker + a worker killed and restarted',
    async () => {
      ensureBuilt();
      const database: TestDatabase = await createTestDatabase();
      cleanup.push(() => database.drop());
      const observer = await openPostgresTaskStore({ url: database.url });
      cleanup.push(() => observer.close());
      const dir = join(temp.dir, 'pg');
      mkdirSync(dir, { recursive: true });
      const shared = ['--store', database.url, ...common];
      // The three processes start side by side (the observer above made the schema).
      const victim = workerKillable(() => startWorkerProcess(['--data-dir', join(temp.dir, 'pg-w2'), ...shared, '--instance-id', 'victim'], env));
      const [api, stable] = await Promise.all([
        startServerProcess(join(temp.dir, 'pg-api'), ['--no-worker', ...shared], env),
        startWorkerProcess(['--data-dir', join(temp.dir, 'pg-w1'), ...shared, '--instance-id', 'stable'], env),
        victim.ready,
      ]);
      cleanup.push(() => api.stop());
      cleanup.push(async () => void (await stable.stop()));
      cleanup.push(() => victim.stop());
      await runChaos(api.url, observer, victim, dir);
    },
    TIMEOUT_MS,
  );

  it(
    'SQLite: two serve processes on one file, the second killed and restarted',
    async () => {
      ensureBuilt();
      const file = join(temp.dir, 'sqlite', 'tasks.db');
      const dir = join(temp.dir, 'sqlite-effects');
      mkdirSync(dir, { recursive: true });
      const shared = ['--store', file, ...common];
      // The stable process runs few tools itself (its creates fill its own slots first), so the victim is busy.
      const stable = await startServerProcess(join(temp.dir, 'sqlite-a'), [...shared, '--instance-id', 'serve-a', '--concurrency', '2'], env);
      cleanup.push(() => stable.stop());
      const observer = openSqliteTaskStore({ path: file });
      cleanup.push(() => observer.close());
      const victim = workerKillable(() => startServerProcess(join(temp.dir, 'sqlite-b'), [...shared, '--instance-id', 'serve-b'], env));
      await victim.ready;
      cleanup.push(() => victim.stop());
      await runChaos(stable.url, observer, victim, dir);
    },
    TIMEOUT_MS,
  );
});
