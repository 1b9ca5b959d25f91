/** The PostgreSQL backend of the `TaskStore` port (`src/core/store.ts`, the composition of `src/core/ports/`), for several instances on one database. */
export type { PostgresBatchStats } from './batch.js';
export type { PostgresConnectionOptions } from './connection.js';
export { POSTGRES_MIGRATIONS, SCHEMA as POSTGRES_SCHEMA, type PostgresMigration } from './migrations.js';
export { openPostgresTaskStore, PostgresTaskStore, type PostgresTaskStoreOptions } from './postgres-task-store.js';
