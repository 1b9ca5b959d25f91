import type Database from 'better-sqlite3';

import type { SessionTables } from '../../core/ports/sessions.js';
import { serverSecretTable, type SessionQuery, sessionTable } from '../session-table.js';
import type { SqliteContext } from './context.js';
import { storageFault } from './group-commit.js';

/** The sessions port on SQLite (see {@link SessionTables}): single statements outside the group commit, prepared on first use. */
export function sqliteSessionTables(ctx: SqliteContext): SessionTables {
  const statements = new Map<string, Database.Statement>();
  const query: SessionQuery = (action, sql, params) => {
    try {
      if (ctx.closed) throw new Error('store is closed');
      let statement = statements.get(sql);
      if (!statement) statements.set(sql, (statement = ctx.db.prepare(sql)));
      return Promise.resolve(statement.reader ? (statement.all(...params) as Array<Record<string, unknown>>) : (statement.run(...params), []));
    } catch (error) {
      return Promise.reject(storageFault(error, action));
    }
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
