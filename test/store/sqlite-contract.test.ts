import { join } from 'node:path';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { describeTaskStoreContract } from '../../src/testing/store-contract.js';
import { makeTempDir } from '../helpers/temp-dir.js';

// A real file in a temp dir (nested, so parent-directory creation is exercised on every run).
describeTaskStoreContract('SqliteTaskStore', async ({ clock }) => {
  const temp = makeTempDir();
  const store = openSqliteTaskStore({ path: join(temp.dir, 'nested', 'tasks.db'), clock });
  return {
    store,
    async cleanup() {
      await store.close();
      temp.remove();
    },
  };
});
