/** The durable SQLite backend of the `TaskStore` port (`src/core/store.ts`, the composition of `src/core/ports/`). */
export type { SqlitePragmas } from './connection.js';
export type { GroupCommitStats } from './group-commit.js';
export { type Migration, MIGRATIONS } from './migrations.js';
export { openSqliteTaskStore, SqliteTaskStore, type SqliteTaskStoreOptions } from './sqlite-task-store.js';
