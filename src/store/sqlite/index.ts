/** The durable SQLite backend of the `TaskStore` port (`src/core/store.ts`). */
export {
  SqliteTaskStore,
  openSqliteTaskStore,
  type SqlitePragmas,
  type SqliteTaskStoreOptions,
} from './sqlite-task-store.js';
export type { GroupCommitStats } from './group-commit.js';
export { MIGRATIONS, type Migration } from './migrations.js';
