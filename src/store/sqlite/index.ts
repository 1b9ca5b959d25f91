/** The durable SQLite backend of the `TaskStore` port (`src/core/store.ts`, the composition of `src/core/ports/`). */
export { SqliteTaskStore, openSqliteTaskStore, type SqliteTaskStoreOptions } from './sqlite-task-store.js';
export type { SqlitePragmas } from './connection.js';
export type { GroupCommitStats } from './group-commit.js';
export { MIGRATIONS, type Migration } from './migrations.js';
