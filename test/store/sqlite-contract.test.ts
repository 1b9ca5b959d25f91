import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { AesGcmFieldCipher } from '../../src/store/field-cipher.js';
import { openSqliteTaskStore, type SqliteTaskStore } from '../../src/store/sqlite/index.js';
import { describeTaskStoreContract } from '../../src/testing/store-contract.js';
import { makeTempDir } from '../helpers/temp-dir.js';

// A real file in a temp dir (nested, so parent-directory creation is exercised on every run); the peer is a second
// store on the same file, as a second process opens it.
describeTaskStoreContract('SqliteTaskStore', async ({ clock }) => {
  const temp = makeTempDir();
  const path = join(temp.dir, 'nested', 'tasks.db');
  const store = openSqliteTaskStore({ path, clock });
  let peer: SqliteTaskStore | undefined;
  return {
    store,
    peer: async () => (peer ??= openSqliteTaskStore({ path, clock })),
    async cleanup() {
      await peer?.close();
      await store.close();
      temp.remove();
    },
  };
});

// The same contract with tool arguments, input requests/answers and steps encrypted at rest (issue 10 §3).
describeTaskStoreContract('SqliteTaskStore (encrypted at rest)', async ({ clock }) => {
  const temp = makeTempDir();
  const store = openSqliteTaskStore({ path: join(temp.dir, 'tasks.db'), clock, encryption: new AesGcmFieldCipher(randomBytes(32)) });
  return {
    store,
    async cleanup() {
      await store.close();
      temp.remove();
    },
  };
});
