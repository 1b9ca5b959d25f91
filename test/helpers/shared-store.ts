import { join } from 'node:path';

import { afterAll, afterEach, beforeAll } from 'vitest';

import type { TaskStore } from '../../src/core/store.js';
import { openPostgresTaskStore } from '../../src/store/postgres/index.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { ensureBuilt } from '../cli/support.js';
import { createTestDatabase, type TestDatabase } from './postgres.js';
import type { makeTempDir } from './temp-dir.js';

/** The store the processes of one describe block share, and the handle the test reads its rows through. */
export interface SharedStore<P> {
  /** `--store` of every process: a SQLite file under the temp dir, or a fresh PostgreSQL database's URL. */
  readonly storeArg: string;
  readonly observer: TaskStore;
  /** Processes the test started; each is stopped after its test, newest first. */
  readonly processes: P[];
}

/**
 * Register the vitest hooks of a multi-process describe block on `backend`: build once, create the store before
 * the tests, stop the test's processes after each test, close the observer, drop the database and remove `temp`.
 */
export function sharedStore<P extends { stop(): Promise<unknown> }>(backend: 'sqlite' | 'postgres', temp: ReturnType<typeof makeTempDir>): SharedStore<P> {
  let database: TestDatabase | undefined;
  let storeArg = '';
  let observer: TaskStore | undefined;
  const processes: P[] = [];
  beforeAll(async () => {
    ensureBuilt();
    if (backend === 'postgres') {
      database = await createTestDatabase();
      storeArg = database.url;
      observer = await openPostgresTaskStore({ url: storeArg });
    } else {
      storeArg = join(temp.dir, 'shared', 'tasks.db');
      observer = openSqliteTaskStore({ path: storeArg });
    }
  });
  afterEach(async () => {
    for (const process of processes.splice(0).reverse()) await process.stop();
  });
  afterAll(async () => {
    await observer?.close();
    await database?.drop();
    temp.remove();
  });
  return {
    get storeArg() {
      return storeArg;
    },
    get observer() {
      if (!observer) throw new Error('the shared store is opened in beforeAll');
      return observer;
    },
    processes,
  };
}
