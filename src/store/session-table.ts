import type { ServerSecretRecord, ServerSecretStore, SessionRecord, SessionStore } from '../core/session-store.js';
import type { JsonObject } from '../core/task.js';

/** One statement on the backend: rows for a SELECT/RETURNING, `[]` otherwise. Errors as the backend's `StoreError`. */
export type SessionQuery = (action: string, sql: string, params: readonly unknown[]) => Promise<Array<Record<string, unknown>>>;

interface SessionRow {
  session_id: string;
  owner_key: string;
  protocol_version: string;
  initialize: string;
  created_at: number;
  last_seen_at: number;
}

/** Where a backend keeps the tasks a session created (see {@link SessionStore.openSessionTasks}). */
export interface SessionTaskTables {
  /** Qualified names of the task and event tables. */
  tasks: string;
  events: string;
  /**
   * The backend's spelling of "the `sessionId` of the event payload `e.payload`", exactly as in the partial index
   * `task_events_by_session` (so the lookup is an index probe).
   */
  payloadSessionId: string;
}

/**
 * The {@link SessionStore} of both backends over one table (same columns; JSON as text, times as epoch ms).
 * @param table - qualified table name (`sessions`, `mcp_tasks.sessions`).
 * @param placeholder - the n-th parameter's spelling (`?` for SQLite, `$n` for PostgreSQL).
 * @param jsonStrings - the backend's spelling of "the strings of the JSON array bound at parameter `param`", as a
 *   one-column subquery.
 */
export function sessionTable(
  query: SessionQuery,
  table: string,
  placeholder: (n: number) => string,
  taskTables: SessionTaskTables,
  jsonStrings: (param: string) => string,
): SessionStore {
  const p = placeholder;
  const put = `INSERT INTO ${table} (session_id, owner_key, protocol_version, initialize, created_at, last_seen_at)
    VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)})
    ON CONFLICT (session_id) DO UPDATE SET owner_key = excluded.owner_key, protocol_version = excluded.protocol_version,
      initialize = excluded.initialize, created_at = excluded.created_at, last_seen_at = excluded.last_seen_at`;
  const get = `SELECT session_id, owner_key, protocol_version, initialize, created_at, last_seen_at FROM ${table} WHERE session_id = ${p(1)}`;
  const existing = `SELECT session_id FROM ${table} WHERE session_id IN (${jsonStrings(p(1))})`;
  const touch = `UPDATE ${table} SET last_seen_at = ${p(1)} WHERE session_id = ${p(2)} AND last_seen_at < ${p(3)}`;
  const remove = `DELETE FROM ${table} WHERE session_id = ${p(1)} RETURNING session_id`;
  const openTasks = openSessionTasksSql(taskTables, p);
  const prune = `DELETE FROM ${table} WHERE session_id IN (SELECT session_id FROM ${table} WHERE last_seen_at < ${p(1)} ORDER BY last_seen_at LIMIT ${p(2)}) RETURNING session_id`;
  return {
    async putSession(record) {
      await query('record a session', put, [
        record.sessionId,
        record.ownerKey,
        record.protocolVersion,
        JSON.stringify(record.initialize),
        record.createdAt,
        record.lastSeenAt,
      ]);
    },
    async getSession(sessionId) {
      const row = (await query('read a session', get, [sessionId]))[0] as SessionRow | undefined;
      return row && toRecord(row);
    },
    async existingSessions(sessionIds) {
      if (sessionIds.length === 0) return new Set();
      return new Set((await query('read sessions', existing, [JSON.stringify(sessionIds)])).map((row) => String(row.session_id)));
    },
    async touchSession(sessionId, at) {
      await query('touch a session', touch, [at, sessionId, at]);
    },
    async deleteSession(sessionId) {
      return (await query('delete a session', remove, [sessionId])).length > 0;
    },
    async deleteIdleSessions(before, limit) {
      return (await query('prune idle sessions', prune, [before, Math.max(1, Math.floor(limit))])).length;
    },
    async openSessionTasks(sessionId, limit) {
      return (await query("list a session's open tasks", openTasks, [sessionId, Math.max(1, Math.floor(limit))])).map((row) => String(row.task_id));
    },
  };
}

/** The query of {@link SessionStore.openSessionTasks} (parameters: session id, limit); exported for plan checks. */
export function openSessionTasksSql(taskTables: SessionTaskTables, p: (n: number) => string): string {
  return `SELECT e.task_id FROM ${taskTables.events} e JOIN ${taskTables.tasks} t ON t.task_id = e.task_id
    WHERE e.kind = 'created' AND e.payload IS NOT NULL AND ${taskTables.payloadSessionId} = ${p(1)} AND t.status IN ('working', 'input_required')
    ORDER BY e.seq LIMIT ${p(2)}`;
}

function toRecord(row: SessionRow): SessionRecord {
  return {
    sessionId: row.session_id,
    ownerKey: row.owner_key,
    protocolVersion: row.protocol_version,
    initialize: JSON.parse(row.initialize) as JsonObject,
    createdAt: Number(row.created_at),
    lastSeenAt: Number(row.last_seen_at),
  };
}

/** The {@link ServerSecretStore} of both backends over the one-row `server_secret` table. */
export function serverSecretTable(query: SessionQuery, table: string, placeholder: (n: number) => string): ServerSecretStore {
  const p = placeholder;
  const insert = `INSERT INTO ${table} (id, mode, salt, verifier, secret, created_at) VALUES (1, ${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}) ON CONFLICT (id) DO NOTHING`;
  const select = `SELECT mode, salt, verifier, secret, created_at FROM ${table} WHERE id = 1`;
  return {
    async claimServerSecret(offered) {
      type Row = { mode: string; salt: string | null; verifier: string | null; secret: string | null; created_at: number };
      const read = async (): Promise<ServerSecretRecord | undefined> => {
        const row = (await query('read the server secret', select, []))[0] as Row | undefined;
        if (!row) return undefined;
        return row.mode === 'kept'
          ? { mode: 'kept', secret: String(row.secret), createdAt: Number(row.created_at) }
          : { mode: 'verifier', salt: String(row.salt), verifier: String(row.verifier), createdAt: Number(row.created_at) };
      };
      // Every start after the first finds the record: the candidate (a slow hash) is then never made.
      if (typeof offered === 'function') {
        const existing = await read();
        if (existing) return existing;
      }
      const candidate = typeof offered === 'function' ? offered() : offered;
      const [salt, verifier, secret] = candidate.mode === 'verifier' ? [candidate.salt, candidate.verifier, null] : [null, null, candidate.secret];
      await query('record the server secret', insert, [candidate.mode, salt, verifier, secret, candidate.createdAt]);
      const record = await read();
      if (!record) throw new Error('server_secret row missing after insert');
      return record;
    },
  };
}
