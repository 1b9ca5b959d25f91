import type Database from 'better-sqlite3';

import type { SessionTables } from '../../core/ports/sessions.js';
import { serverSecretTable, type SessionQuery, sessionTable } from '../session-table.js';
import type { SqliteContext } from './context.js';
import { storageFault } from './group-commit.js';

/**
 * The sessions port on SQLite (see {@link SessionTables}): single statements outside the group commit, prepared on
 * first use; a read answers, and a write resolves, once what it saw or wrote is on disk (`WalSync`).
 */
export function sqliteSessionTables(ctx: SqliteContext): SessionTables {
  const statements = new Map<string, Database.Statement>();
  const query: SessionQuery = (action, sql, params) => {
    let statement: Database.Statement;
    try {
      if (ctx.closed) throw new Error('store is closed');
      const cached = statements.get(sql);
      statement = cached ?? ctx.db.prepare(sql);
      if (!cached) statements.set(sql, statement);
    } catch (error) {
      return Promise.reject(storageFault(error, action));
    }
    return statement.reader
      ? ctx.readDurable(action, () => statement.all(...params) as Array<Record<string, unknown>>)
      : ctx.writeAlone(action, () => (statement.run(...params), []));
  };
  return {
    sessions: sessionTable(
      query,
      'sessions',
      () => '?',
      { tasks: 'tasks', events: 'task_events', payloadSessionId: "json_extract(e.payload, '$.sessionId')" },
      (param) => `SELECT value FROM json_each(${param})`,
    ),
    serverSecret: serverSecretTable(query, 'server_secret', () => '?'),
  };
}
