import type { SessionTables } from '../../core/ports/sessions.js';
import { serverSecretTable, sessionTable } from '../session-table.js';
import type { PostgresContext } from './context.js';
import { SCHEMA } from './migrations.js';

/** The sessions port on PostgreSQL (see {@link SessionTables}): `mcp_tasks.sessions` and `server_secret`, single statements on the pool. */
export function postgresSessionTables(ctx: PostgresContext): SessionTables {
  return {
    sessions: sessionTable(
      (action, sql, params) => ctx.read(action, sql, params),
      `${SCHEMA}.sessions`,
      (n) => `$${n}`,
      {
        tasks: `${SCHEMA}.tasks`,
        events: `${SCHEMA}.task_events`,
        payloadSessionId: "(e.payload::jsonb ->> 'sessionId')",
      },
      (param) => `SELECT jsonb_array_elements_text(${param}::jsonb)`,
    ),
    serverSecret: serverSecretTable(
      (action, sql, params) => ctx.read(action, sql, params),
      `${SCHEMA}.server_secret`,
      (n) => `$${n}`,
    ),
  };
}
