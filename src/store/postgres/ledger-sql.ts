import { AUDIT_COLUMNS, IDEMPOTENCY_COLUMNS, OPERATION_COLUMNS } from '../ledger-codec.js';
import { SCHEMA as S } from './migrations.js';

const NOW = (param: string): string => `n AS (SELECT COALESCE(${param}::bigint, ${S}.now_ms()) AS now)`;

/** Statements of the idempotency keys and the operation ledger (PostgreSQL; schema: migration 2). */
export const LEDGER_SQL = Object.freeze({
  /** `$1` owner, `$2` generation, `$3` key, `$4` now (NULL: the database clock). */
  findKey: `WITH ${NOW('$4')} SELECT ${IDEMPOTENCY_COLUMNS} FROM ${S}.idempotency_keys, n
    WHERE owner_key = $1 AND generation = $2 AND idem_key = $3 AND expires_at > n.now`,
  /**
   * Claim a key, replacing a lapsed one. A concurrent claim of the same key in another transaction makes this one
   * wait for it (unique index) and then re-check `expires_at` on the committed row: exactly one claim wins.
   * `$1…$6` owner, generation, key, tool, digest, task id; `$7` window ms; `$8` now.
   */
  claimKey: `WITH ${NOW('$8')}
    INSERT INTO ${S}.idempotency_keys AS k (${IDEMPOTENCY_COLUMNS})
    SELECT $1, $2, $3, $4, $5, $6, n.now, n.now + $7::bigint FROM n
    ON CONFLICT (owner_key, generation, idem_key) DO UPDATE SET tool_name = EXCLUDED.tool_name,
      request_digest = EXCLUDED.request_digest, task_id = EXCLUDED.task_id, created_at = EXCLUDED.created_at,
      expires_at = EXCLUDED.expires_at
    WHERE k.expires_at <= EXCLUDED.created_at
    RETURNING idem_key`,
  /** The row that beat a claim (`$1…$3`), whatever its expiry: it was committed a moment ago. */
  keyRow: `SELECT ${IDEMPOTENCY_COLUMNS} FROM ${S}.idempotency_keys WHERE owner_key = $1 AND generation = $2 AND idem_key = $3`,
  /** `$1` now, `$2` limit. */
  purgeKeys: `WITH ${NOW('$1')}, due AS (SELECT ctid FROM ${S}.idempotency_keys, n WHERE expires_at <= n.now LIMIT $2 FOR UPDATE SKIP LOCKED)
    DELETE FROM ${S}.idempotency_keys WHERE ctid IN (SELECT ctid FROM due)`,

  insertOperation: `INSERT INTO ${S}.operations (${OPERATION_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
    ON CONFLICT (task_id, op_key) DO NOTHING`,
  operationByKey: `SELECT ${OPERATION_COLUMNS} FROM ${S}.operations WHERE task_id = $1 AND op_key = $2`,
  operationById: `SELECT ${OPERATION_COLUMNS} FROM ${S}.operations WHERE operation_id = $1`,
  /** `$1` id, `$2` status, `$3` receipt (NULL keeps), `$4` detail, `$5` now, `$6` allowed current statuses. */
  settleOperation: `UPDATE ${S}.operations SET status = $2, receipt = COALESCE($3, receipt), detail = $4, updated_at = $5
    WHERE operation_id = $1 AND status = ANY($6::text[])
    RETURNING ${OPERATION_COLUMNS}`,
  /** `$1` owner, `$2` task, `$3` statuses (each NULL = any), `$4` limit. */
  listOperations: `SELECT ${OPERATION_COLUMNS} FROM ${S}.operations
    WHERE ($1::text IS NULL OR owner_key = $1) AND ($2::text IS NULL OR task_id = $2) AND ($3::text[] IS NULL OR status = ANY($3::text[]))
    ORDER BY created_at, operation_id LIMIT $4`,

  /** `$1…$9` arrays of the {@link AUDIT_COLUMNS}. */
  appendAudit: `INSERT INTO ${S}.audit_log (${AUDIT_COLUMNS})
    SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])`,
  /** `$1` after seq, `$2` since, `$3` tool, `$4` owner (NULL = any), `$5` limit. */
  listAudit: `SELECT seq, ${AUDIT_COLUMNS} FROM ${S}.audit_log
    WHERE seq > $1 AND ($2::bigint IS NULL OR at >= $2) AND ($3::text IS NULL OR tool = $3) AND ($4::text IS NULL OR owner_key = $4)
    ORDER BY seq LIMIT $5`,
  purgeAudit: `DELETE FROM ${S}.audit_log WHERE seq IN (SELECT seq FROM ${S}.audit_log WHERE at < $1 ORDER BY seq LIMIT $2)`,
});
