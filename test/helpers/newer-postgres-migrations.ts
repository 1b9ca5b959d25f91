import { POSTGRES_MIGRATIONS, type PostgresMigration } from '../../src/store/postgres/migrations.js';

/**
 * Migrations of a newer mcp-tasks, which this code does not know (a rolling deploy's newer processes migrated the
 * schema): one additive (compatible with this code), one that breaks this code (it renames a column this code writes).
 */
export const KNOWN_POSTGRES_VERSION = POSTGRES_MIGRATIONS.length;

export const NEWER_ADDITIVE: PostgresMigration = {
  version: KNOWN_POSTGRES_VERSION + 1,
  name: 'test: a table of newer code',
  sql: 'CREATE TABLE mcp_tasks.newer_feature (id bigint PRIMARY KEY);',
  breaking: false,
};

export const NEWER_BREAKING: PostgresMigration = {
  version: KNOWN_POSTGRES_VERSION + 2,
  name: 'test: renames what older code writes',
  sql: 'ALTER TABLE mcp_tasks.tool_state RENAME COLUMN value TO document;',
  breaking: true,
};

/** What this code says of a schema with {@link NEWER_BREAKING} applied (start-up, `/readyz`, doctor). */
export const BREAKING_REFUSAL = `schema version ${NEWER_BREAKING.version} is newer than this mcp-tasks knows (${KNOWN_POSTGRES_VERSION}), and migration ${NEWER_BREAKING.version} ("${NEWER_BREAKING.name}") is breaking for older code: upgrade mcp-tasks`;
