import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll } from 'vitest';

import { AesGcmFieldCipher } from '../../src/store/field-cipher.js';
import { openPostgresTaskStore, type PostgresTaskStore } from '../../src/store/postgres/index.js';
import { describeTaskStoreContract } from '../../src/testing/store-contract.js';
import { createTestDatabase, emptyTaskStore, type TestDatabase } from '../helpers/postgres.js';

// A real PostgreSQL server (npm run pg:start, or MCP_TASKS_TEST_PG_URL): a database of this file's own, emptied
// before every test, and a new store (pool, caches) per test.
let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

// The peer is a second store (its own pool) on the same database, as a second instance opens it.
describeTaskStoreContract('PostgresTaskStore', async ({ clock }) => {
  await emptyTaskStore(database.url);
  const store = await openPostgresTaskStore({ url: database.url, clock });
  let peer: Promise<PostgresTaskStore> | undefined;
  return {
    store,
    peer: () => (peer ??= openPostgresTaskStore({ url: database.url, clock })),
    async cleanup() {
      await (await peer)?.close();
      await store.close();
    },
  };
});

// The same contract with tool arguments, input requests/answers and steps encrypted at rest (issue 10 §3).
describeTaskStoreContract('PostgresTaskStore (encrypted at rest)', async ({ clock }) => {
  await emptyTaskStore(database.url);
  const store = await openPostgresTaskStore({ url: database.url, clock, encryption: new AesGcmFieldCipher(randomBytes(32)) });
  return {
    store,
    cleanup: () => store.close(),
  };
});
