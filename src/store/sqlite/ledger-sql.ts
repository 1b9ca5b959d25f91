import { AUDIT_COLUMNS, IDEMPOTENCY_COLUMNS, OPERATION_COLUMNS } from '../ledger-codec.js';

/** Statements of the idempotency keys and the operation ledger (SQLite; schema: migration 3). */
export const LEDGER_SQL = Object.freeze({
  findKey: `SELECT ${IDEMPOTENCY_COLUMNS} FROM idempotency_keys
    WHERE owner_key = @ownerKey AND generation = @generation AND idem_key = @key AND expires_at > @now`,
  /** A lapsed key may be claimed again: its row is replaced. */
  deleteLapsedKey: `DELETE FROM idempotency_keys
    WHERE owner_key = @ownerKey AND generation = @generation AND idem_key = @key AND expires_at <= @now`,
  insertKey: `INSERT INTO idempotency_keys (${IDEMPOTENCY_COLUMNS})
    VALUES (@ownerKey, @generation, @key, @toolName, @requestDigest, @taskId, @now, @now + @windowMs)
    ON CONFLICT DO NOTHING`,
  purgeKeys: 'DELETE FROM idempotency_keys WHERE rowid IN (SELECT rowid FROM idempotency_keys WHERE expires_at <= @now LIMIT @limit)',

  insertOperation: `INSERT INTO operations (${OPERATION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (task_id, op_key) DO NOTHING`,
  operationByKey: `SELECT ${OPERATION_COLUMNS} FROM operations WHERE task_id = @taskId AND op_key = @key`,
  operationById: `SELECT ${OPERATION_COLUMNS} FROM operations WHERE operation_id = @operationId`,
  settleOperation: `UPDATE operations SET status = @status, receipt = COALESCE(@receipt, receipt), detail = @detail, updated_at = @now
    WHERE operation_id = @operationId AND status IN (SELECT value FROM json_each(@from))
    RETURNING ${OPERATION_COLUMNS}`,
  listOperations: `SELECT ${OPERATION_COLUMNS} FROM operations
    WHERE (@ownerKey IS NULL OR owner_key = @ownerKey) AND (@taskId IS NULL OR task_id = @taskId)
      AND (@statuses IS NULL OR status IN (SELECT value FROM json_each(@statuses)))
    ORDER BY created_at, operation_id LIMIT @limit`,

  appendAudit: `INSERT INTO audit_log (${AUDIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  listAudit: `SELECT seq, ${AUDIT_COLUMNS} FROM audit_log
    WHERE seq > @afterSeq AND (@since IS NULL OR at >= @since) AND (@tool IS NULL OR tool = @tool) AND (@ownerKey IS NULL OR owner_key = @ownerKey)
    ORDER BY seq LIMIT @limit`,
  purgeAudit: 'DELETE FROM audit_log WHERE seq IN (SELECT seq FROM audit_log WHERE at < @before ORDER BY seq LIMIT @limit)',
});
