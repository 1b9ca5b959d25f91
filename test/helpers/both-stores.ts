import { join } from 'node:path';

import { afterAll, afterEach, beforeAll, describe } from 'vitest';

import type { Clock } from '../../src/core/clock.js';
import type { TaskStore } from '../../src/core/store.js';
import { openPostgresTaskStore } from '../../src/store/postgres/index.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { createTestDatabase, emptyTaskStore, type TestDatabase } from './postgres.js';
import { makeTempDir } from './temp-dir.js';

/** What a test on both backends gets: fresh, empty stores on one database (SQLite file or PostgreSQL database). */
export interface BackendFixture {
  /** `sqlite` or `postgres`. */
  name: 'sqlite' | 'postgres';
  /**
   * Open a store on this test's database (call it twice for two instances on one database). Every store is
   * closed after the test. `clock` judges leases and expiry sweeps when given.
   */
  open(clock?: Clock): Promise<TaskStore>;
}

/**
 * `describe` the same tests against SQLite (a temp file) and PostgreSQL (a database of this file's own, emptied
 * before each test; `npm run pg:start`, else the test fails and says how to start one). For rules that live above
 * the store and must hold for every backend alike.
 */
export function describeOnBothStores(title: string, body: (backend: BackendFixture) => void): void {
  for (const name of ['sqlite', 'postgres'] as const) {
    describe(`${title} (${name})`, () => {
      let database: TestDatabase | undefined;
      let temp: ReturnType<typeof makeTempDir> | undefined;
      const opened: TaskStore[] = [];
      let fresh = true;
      if (name === 'postgres') {
        beforeAll(async () => {
          database = await createTestDatabase();
        });
        afterAll(async () => {
          await database?.drop();
        });
      }
      afterEach(async () => {
        for (const store of opened.splice(0).reverse()) await store.close();
        temp?.remove();
        temp = undefined;
        fresh = true;
      });
      const fixture: BackendFixture = {
        name,
        async open(clock) {
          let store: TaskStore;
          if (name === 'sqlite') {
            temp ??= makeTempDir();
            store = openSqliteTaskStore({ path: join(temp.dir, 'tasks.db'), ...(clock ? { clock } : {}) });
          } else {
            if (!database) throw new Error('the PostgreSQL test database was not created');
            if (fresh) await emptyTaskStore(database.url);
            store = await openPostgresTaskStore({ url: database.url, ...(clock ? { clock } : {}) });
          }
          fresh = false;
          opened.push(store);
          return store;
        },
      };
      body(fixture);
    });
  }
}
