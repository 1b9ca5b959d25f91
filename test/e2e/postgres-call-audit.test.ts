/**
 * Review 37: every audited tools/call has exactly one `call` entry, on PostgreSQL, with two API instances racing
 * on one idempotency key, quota refusals beside accepted creates, and the inline grace.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { IDEMPOTENCY_KEY_META_KEY } from '../../src/protocol/constants.js';
import { openPostgresTaskStore, type PostgresTaskStore } from '../../src/store/postgres/index.js';
import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import { createTestDatabase, emptyTaskStore, type TestDatabase } from '../helpers/postgres.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { postModern } from '../helpers/wire.js';

let database: TestDatabase;
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  database = await createTestDatabase();
});
beforeEach(async () => {
  await emptyTaskStore(database.url);
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await database?.drop();
});

async function start(limits: Record<string, unknown>, fastPath: boolean): Promise<{ running: RunningTasksServer; store: PostgresTaskStore }> {
  const store = await openPostgresTaskStore({ url: database.url });
  cleanups.push(() => store.close());
  const running = await startTasksServer({ tools: conformanceFixtureTools(), fastPath, limits, wrapStore: () => store });
  cleanups.push(() => running.close());
  return { running, store };
}

describe('review 37: one call entry per tools/call on PostgreSQL under races', () => {
  for (const fastPath of [true, false]) {
    it(`two instances, one key raced, quota refusals among accepted creates (fast path ${fastPath ? 'on' : 'off'})`, async () => {
      const a = await start({ maxActiveTasksPerOwner: 12 }, fastPath);
      const b = await start({ maxActiveTasksPerOwner: 12 }, !fastPath);
      const calls = Array.from({ length: 40 }, (_, i) => {
        const server = i % 2 === 0 ? a : b;
        const params =
          i < 16
            ? { name: 'slow_compute', arguments: { seconds: 2 }, _meta: { [IDEMPOTENCY_KEY_META_KEY]: 'shared-key' } }
            : { name: 'slow_compute', arguments: { seconds: 2 } };
        return postModern(server.running.url, 'tools/call', params);
      });
      const answers = await Promise.all(calls);
      // A refusal's entry is appended without being awaited: let it land.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const entries = (await a.store.listAudit({ limit: 10_000 })).filter((e) => e.kind === 'call');
      const answeredTasks = answers.map((r) => (r.body.result?.resultType === 'task' ? String(r.body.result?.taskId) : undefined));
      const refused = answers.filter((r) => r.body.error !== undefined).length;
      expect(answeredTasks.filter((t) => t !== undefined).length + refused).toBe(40);
      expect(entries.map((e) => [e.taskId?.slice(0, 6) ?? null, e.outcome])).toHaveLength(40);
      for (const taskId of new Set(answeredTasks.filter((t) => t !== undefined))) {
        expect(
          entries.filter((e) => e.taskId === taskId),
          taskId,
        ).toHaveLength(answeredTasks.filter((t) => t === taskId).length);
      }
      expect(entries.filter((e) => e.taskId === null)).toHaveLength(refused);
      expect(refused).toBeGreaterThan(0);
      // The keyed calls share one task (or were refused).
      expect(new Set(answeredTasks.slice(0, 16).filter((t) => t !== undefined)).size).toBeLessThanOrEqual(1);
      // No argument values in any entry.
      expect(JSON.stringify(entries)).not.toContain('"seconds"');
    }, 60_000);
  }
});
