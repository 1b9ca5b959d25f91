import { SCHEMA } from './migrations.js';

/**
 * Every data statement of the PostgreSQL store, in one place so that the conditions that settle races can be
 * reviewed together (schema: `migrations.ts`). Parameters are positional; lists are bound as arrays and expanded
 * with `unnest`, so one statement serves any number of rows.
 *
 * Time: `$now` parameters are `NULL` in production, so `COALESCE($n, now_ms())` reads the database clock
 * (`clock_timestamp()`, once per statement through the `n` CTE); a store opened with a clock (tests) passes that
 * clock's time instead. Task rows are read under READ COMMITTED; every conditional write re-checks its condition
 * on the newest row version (PostgreSQL's EvalPlanQual), so concurrent writers from any instance are settled by the
 * database, as in SQLite.
 */

const S = SCHEMA;

/** Columns of a task row, in the order `TaskRow` expects (`t.` qualified). */
const TASK_COLUMNS = `t.task_id, t.owner_key, t.generation, t.protocol_version, t.tool_name, t.arguments, t.client_capabilities,
  t.progress_token, t.status, t.status_message, t.created_at, t.last_updated_at, t.ttl_ms, t.poll_interval_ms, t.expires_at, t.seq,
  t.attempt, t.lease_owner, t.lease_expires_at, t.idempotency_key, t.request_digest`;

/** `now` in epoch ms for one statement: the given time, or the database clock (a CTE `n`, evaluated once). */
const NOW = (param: string): string => `n AS (SELECT COALESCE(${param}::bigint, ${S}.now_ms()) AS now)`;

const INPUT_REQUEST_COLUMNS = 'task_id, key, request, response, state, created_at, answered_at';

/**
 * The multi-row task INSERT of a batch's creates (`$2…$19` are the column arrays, `n` the store's now). `$20` holds,
 * per create, the v1 session it requires (`NewTask.requireSession`) or NULL: such a row is inserted only while that
 * session's record exists, checked by this statement (issue 25: the request's session check folded into its create).
 */
const INSERT_TASKS = `INSERT INTO ${S}.tasks (task_id, owner_key, generation, protocol_version, tool_name, arguments,
      client_capabilities, progress_token, status, status_message, created_at, last_updated_at, ttl_ms,
      poll_interval_ms, expires_at, attempt, lease_owner, lease_expires_at, idempotency_key, request_digest)
    SELECT v.task_id, v.owner_key, v.generation, v.protocol_version, v.tool_name, v.arguments, v.client_capabilities,
      v.progress_token, 'working', v.status_message, v.created_at, v.created_at, v.ttl_ms, v.poll_interval_ms,
      v.expires_at, v.attempt, v.lease_owner, CASE WHEN v.lease_ms IS NULL THEN NULL ELSE n.now + v.lease_ms END,
      v.idempotency_key, v.request_digest
    FROM n, unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
      $10::text[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[], $15::int[], $16::text[], $17::bigint[],
      $18::text[], $19::text[], $20::text[]) WITH ORDINALITY AS v(task_id, owner_key, generation, protocol_version, tool_name, arguments,
      client_capabilities, progress_token, status_message, created_at, ttl_ms, poll_interval_ms, expires_at, attempt,
      lease_owner, lease_ms, idempotency_key, request_digest, require_session, ord)
    WHERE v.require_session IS NULL OR EXISTS (SELECT 1 FROM ${S}.sessions s WHERE s.session_id = v.require_session)
    ORDER BY v.ord
    ON CONFLICT (owner_key, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING`;

/**
 * The CTEs of the transitions of one batch, all in one statement (issue 25: one statement for N transitions, not one
 * each). Every parameter is an array with one element per transition, in queue order: `$1` task (DISTINCT ids —
 * `PostgresTransitions` runs a repeated id in a later statement), `$2` to, `$3`/`$4` statusMessage (set it? / the
 * value), `$5` now, `$6` release the lease, `$7` the allowed from-statuses comma-joined (`unnest` flattens a 2-D
 * array, so each set is one text, split by `string_to_array`), `$8` lease holder or NULL, `$9`/`$10` the outcome,
 * `$11`/`$12` the kind and detail of the `task.ended` audit entry or NULL (its owner, tool and task come from the row,
 * as `taskEndedAudit` takes them).
 *
 * `v` is the items with their position `ord` (from 1). `cur` locks the rows in task-id order — two batches of any
 * processes then take their row locks in the same order and cannot deadlock on each other — with `FOR NO KEY UPDATE`,
 * what the UPDATE takes: it queues behind another transition of the row, not behind the `FOR KEY SHARE` of a step or
 * result-chunk write (a cancel waited for a 64 MiB result to be written), and reads each row's
 * newest status (the `from` of its event). `upd` applies each item only while that status is in its own from-set and
 * its lease holder, if any, holds the lease; `outcome` and `ended_audit` write only for items `upd` applied, in item
 * order (audit seqs as the item-by-item form gives them).
 */
const TRANSITION_STEPS = `v AS (SELECT * FROM unnest($1::text[], $2::text[], $3::boolean[], $4::text[], $5::bigint[], $6::boolean[],
        $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[])
      WITH ORDINALITY AS v(task_id, to_status, set_message, message, now, release, from_set, lease_owner, outcome_kind,
        outcome_body, audit_kind, audit_detail, ord)),
    cur AS (SELECT t.task_id, t.status FROM ${S}.tasks t WHERE t.task_id = ANY($1::text[]) ORDER BY t.task_id FOR NO KEY UPDATE),
    upd AS (
      UPDATE ${S}.tasks t SET
        status = v.to_status,
        status_message = CASE WHEN v.set_message THEN v.message ELSE t.status_message END,
        last_updated_at = v.now,
        lease_owner = CASE WHEN v.release THEN NULL ELSE t.lease_owner END,
        lease_expires_at = CASE WHEN v.release THEN NULL ELSE t.lease_expires_at END
      FROM cur JOIN v ON v.task_id = cur.task_id
      WHERE t.task_id = cur.task_id AND cur.status = ANY(string_to_array(v.from_set, ','))
        AND (v.lease_owner IS NULL OR t.lease_owner = v.lease_owner)
      RETURNING v.ord AS item_ord, cur.status AS from_status, ${TASK_COLUMNS}),
    outcome AS (INSERT INTO ${S}.task_outcomes (task_id, kind, body)
      SELECT upd.task_id, v.outcome_kind, v.outcome_body FROM upd JOIN v ON v.ord = upd.item_ord
      WHERE v.outcome_kind IS NOT NULL ORDER BY upd.item_ord),
    ended_audit AS (INSERT INTO ${S}.audit_log (at, kind, owner_key, scopes, tool, task_id, arguments_digest, outcome, detail)
      SELECT v.now, v.audit_kind, upd.owner_key, NULL, upd.tool_name, upd.task_id, NULL, v.to_status, v.audit_detail
      FROM upd JOIN v ON v.ord = upd.item_ord
      WHERE v.audit_kind IS NOT NULL ORDER BY upd.item_ord)`;

/**
 * Claim up to `$4` runnable tasks for `$1` with a lease of `$2` ms on the store's now (`$3`): never-leased `working`
 * tasks before their TTL, oldest first, `FOR UPDATE SKIP LOCKED`; each attempt counted. Returns the rows with `store_now`.
 */
const CLAIM_RUNNABLE_CANDIDATES = `${NOW('$3')}, c AS (
      SELECT t.task_id FROM ${S}.tasks t, n
      WHERE t.status = 'working' AND t.lease_expires_at IS NULL AND t.lease_owner IS NULL
        AND (t.expires_at IS NULL OR t.expires_at > n.now)
      ORDER BY t.lease_expires_at NULLS FIRST, t.seq
      LIMIT $4
      FOR UPDATE OF t SKIP LOCKED)`;
const CLAIM_RUNNABLE_UPDATE = `UPDATE ${S}.tasks t SET attempt = t.attempt + 1, lease_owner = $1, lease_expires_at = n.now + $2
    FROM c, n
    WHERE t.task_id = c.task_id
    RETURNING n.now AS store_now, ${TASK_COLUMNS}`;

/**
 * The CTEs `f` and `appended` of a one-statement write with events: one feed seq per row of the CTE `ev` (`task_id`,
 * `kind`, `status`, `at`, `payload`, `ord` from 1), taken only when `ev` has rows (otherwise no seq is used and no
 * NOTIFY sent), and the events inserted with `seq = f.base + ord`. The counter's row lock is taken after the task rows'
 * and held only while the statement commits.
 */
const APPEND_EV = `f AS (UPDATE ${S}.task_feed SET last_seq = last_seq + (SELECT count(*) FROM ev) WHERE EXISTS (SELECT 1 FROM ev)
      RETURNING last_seq - (SELECT count(*) FROM ev) AS base),
    appended AS (INSERT INTO ${S}.task_events (seq, task_id, kind, status, at, payload)
      SELECT f.base + ev.ord, ev.task_id, ev.kind, ev.status, ev.at, ev.payload FROM f, ev)`;

export const SQL = Object.freeze({
  /**
   * Large results (issue 10 §2): the task row is locked (`FOR KEY SHARE`, which a concurrent delete waits for) so no
   * chunk is written for a task deleted meanwhile; chunks are replaced as a whole and read one at a time.
   */
  /** Serializes the chunk writers of one task (seed apart from `lockOwner`'s). */
  lockChunkWriters: 'SELECT pg_advisory_xact_lock(hashtextextended($1::text, 7311)) AS locked',
  lockTaskForChunks: `SELECT 1 AS present FROM ${S}.tasks WHERE task_id = $1 AND ($2::text IS NULL OR (lease_owner = $2 AND status IN ('working', 'input_required'))) FOR KEY SHARE`,
  /**
   * The same condition again once the chunks are written, `FOR SHARE`: that waits for a transition of the task still
   * under way (its `FOR NO KEY UPDATE` no longer waits for the chunk write, so a cancel can be open beside it) and
   * then reads what it committed — an ended task keeps no chunks.
   */
  confirmTaskForChunks: `SELECT 1 AS present FROM ${S}.tasks WHERE task_id = $1 AND ($2::text IS NULL OR (lease_owner = $2 AND status IN ('working', 'input_required'))) FOR SHARE`,
  deleteResultChunks: `DELETE FROM ${S}.result_chunks WHERE task_id = $1`,
  discardUnservedResultChunks: `DELETE FROM ${S}.result_chunks WHERE task_id = $1 AND EXISTS (SELECT 1 FROM ${S}.tasks t WHERE t.task_id = $1 AND (t.status = 'cancelled'
      OR (t.status IN ('completed', 'failed') AND EXISTS (SELECT 1 FROM ${S}.task_outcomes o WHERE o.task_id = t.task_id AND o.kind = 'error'))))`,
  insertResultChunk: `INSERT INTO ${S}.result_chunks (task_id, chunk_index, data) VALUES ($1, $2, $3)`,
  readResultChunk: `SELECT data FROM ${S}.result_chunks WHERE task_id = $1 AND chunk_index = $2`,
  /** Quotas (issue 10 §2), run in the create's transaction under `lockOwner` (see `TaskStore.admitCreate`). */
  lockOwner: 'SELECT pg_advisory_xact_lock(hashtextextended($1::text, 7310)) AS locked',
  pruneAdmissions: `DELETE FROM ${S}.owner_creates WHERE created_at <= $1`,
  windowAdmissions: `SELECT COUNT(*)::int AS count, MIN(created_at) AS oldest FROM ${S}.owner_creates WHERE owner_key = $1`,
  /** Active tasks of the owner: non-terminal and not expired on `$2` (NULL: the database clock; see `TaskStore.admitCreate`). */
  activeOfOwner: `SELECT COUNT(*)::int AS count FROM ${S}.tasks
    WHERE owner_key = $1 AND status IN ('working', 'input_required') AND (expires_at IS NULL OR expires_at > COALESCE($2::bigint, ${S}.now_ms()))`,
  recordAdmission: `INSERT INTO ${S}.owner_creates (task_id, owner_key, created_at) VALUES ($1, $2, $3)
    ON CONFLICT (task_id) DO UPDATE SET owner_key = EXCLUDED.owner_key, created_at = EXCLUDED.created_at`,

  begin: 'BEGIN',
  commit: 'COMMIT',
  rollback: 'ROLLBACK',
  savepoint: 'SAVEPOINT op',
  release: 'RELEASE SAVEPOINT op',
  rollbackTo: 'ROLLBACK TO SAVEPOINT op',
  itemSavepoint: 'SAVEPOINT item',
  itemRelease: 'RELEASE SAVEPOINT item',
  itemRollbackTo: 'ROLLBACK TO SAVEPOINT item',

  /**
   * The event feed's only writer (see `PostgresBatcher`): `$1` seqs from the counter, whose row lock then stays
   * held until COMMIT, and the events with them. `seq = base + ordinality`, so the seqs keep the staged order.
   */
  appendEvents: `WITH f AS (UPDATE ${S}.task_feed SET last_seq = last_seq + $1 RETURNING last_seq - $1 AS base)
    INSERT INTO ${S}.task_events (seq, task_id, kind, status, at, payload)
    SELECT f.base + e.ord, e.task_id, e.kind, e.status, e.at, e.payload
    FROM f, unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[]) WITH ORDINALITY AS e(task_id, kind, status, at, payload, ord)
    RETURNING seq`,

  eventsAfter: `SELECT seq, task_id, kind, status, at, payload FROM ${S}.task_events WHERE seq > $1 ORDER BY seq LIMIT $2`,

  /** The counter, not MAX(seq): every seq up to it is committed and visible (it moves only at commits). */
  lastEventSeq: `SELECT last_seq AS seq FROM ${S}.task_feed`,

  /**
   * Every create of a batch in one statement. `seq` comes from the sequence (row order = array order); the lease
   * starts at the store's now. A create whose `(owner, idempotency key)` is taken is skipped (`ON CONFLICT DO
   * NOTHING`; also when another instance inserted it and has not committed yet: the statement waits for that
   * transaction and then skips), so it is missing from the RETURNING rows: that is the conflict.
   */
  insertTasks: `WITH ${NOW('$1')}
    ${INSERT_TASKS}
    RETURNING task_id, seq, lease_expires_at`,

  /**
   * A batch of creates alone, as one autocommit statement (one round trip): the rows (as {@link SQL.insertTasks}),
   * their steps, their events with seqs from the feed counter, and their requests' `call` audit entries
   * (`NewTask.audit`, `$30…$38`), all for the inserted rows only. Events come in `$25…$29` in staged order;
   * `feed_base + n` is the seq of the n-th event of an inserted task.
   */
  createTasksAlone: `WITH ${NOW('$1')},
    ins AS (${INSERT_TASKS} RETURNING task_id, seq, lease_expires_at),
    steps AS (INSERT INTO ${S}.task_steps (task_id, name, value, created_at)
      SELECT s.task_id, s.name, s.value, s.created_at
      FROM unnest($21::text[], $22::text[], $23::text[], $24::bigint[]) AS s(task_id, name, value, created_at)
      JOIN ins ON ins.task_id = s.task_id),
    ev AS (SELECT e.task_id, e.kind, e.status, e.at, e.payload, row_number() OVER (ORDER BY e.ord) AS ord
      FROM unnest($25::text[], $26::text[], $27::text[], $28::bigint[], $29::text[]) WITH ORDINALITY AS e(task_id, kind, status, at, payload, ord)
      JOIN ins ON ins.task_id = e.task_id),
    f AS (UPDATE ${S}.task_feed SET last_seq = last_seq + (SELECT count(*) FROM ev) RETURNING last_seq - (SELECT count(*) FROM ev) AS base),
    appended AS (INSERT INTO ${S}.task_events (seq, task_id, kind, status, at, payload)
      SELECT f.base + ev.ord, ev.task_id, ev.kind, ev.status, ev.at, ev.payload FROM f, ev),
    audit AS (INSERT INTO ${S}.audit_log (at, kind, owner_key, scopes, tool, task_id, arguments_digest, outcome, detail)
      SELECT a.at, a.kind, a.owner_key, a.scopes, a.tool, a.task_id, a.arguments_digest, a.outcome, a.detail
      FROM unnest($30::bigint[], $31::text[], $32::text[], $33::text[], $34::text[], $35::text[], $36::text[], $37::text[], $38::text[])
        WITH ORDINALITY AS a(at, kind, owner_key, scopes, tool, task_id, arguments_digest, outcome, detail, ord)
      JOIN ins ON ins.task_id = a.task_id ORDER BY a.ord)
    SELECT ins.task_id, ins.seq, ins.lease_expires_at, f.base AS feed_base FROM ins, f`,

  insertSteps: `INSERT INTO ${S}.task_steps (task_id, name, value, created_at)
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])`,

  /**
   * Scoped by owner and generation only: read visibility after `expiresAt` is judged above the store; with `$4`, only
   * while that v1 session's record exists (`TaskScope.requireSession`).
   */
  getScoped: `SELECT ${TASK_COLUMNS} FROM ${S}.tasks t
    WHERE t.task_id = $1 AND t.owner_key = $2 AND ($3::text IS NULL OR t.generation = $3)
      AND ($4::text IS NULL OR EXISTS (SELECT 1 FROM ${S}.sessions s WHERE s.session_id = $4))`,

  /** {@link SQL.getScoped} (the session in `$5`) with the outcome of a terminal task when its body has at most `$4` characters. */
  getScopedWithOutcome: `SELECT ${TASK_COLUMNS}, o.kind AS outcome_kind, o.body AS outcome_body FROM ${S}.tasks t
    LEFT JOIN ${S}.task_outcomes o ON o.task_id = t.task_id AND t.status IN ('completed', 'failed', 'cancelled') AND char_length(o.body) <= $4::bigint
    WHERE t.task_id = $1 AND t.owner_key = $2 AND ($3::text IS NULL OR t.generation = $3)
      AND ($5::text IS NULL OR EXISTS (SELECT 1 FROM ${S}.sessions s WHERE s.session_id = $5))`,

  /**
   * {@link SQL.getScopedWithOutcome} for several reads in one statement (`MergedReads`): one row per read that matched,
   * `ord` its position from 1; each read brings its own task id, owner, generation (or null), outcome limit and session
   * (or null), in arrays `$1` … `$5`.
   */
  getScopedWithOutcomeMany: `SELECT q.ord, ${TASK_COLUMNS}, o.kind AS outcome_kind, o.body AS outcome_body
    FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[]) WITH ORDINALITY AS q(task_id, owner_key, generation, max_chars, session_id, ord)
    JOIN ${S}.tasks t ON t.task_id = q.task_id AND t.owner_key = q.owner_key AND (q.generation IS NULL OR t.generation = q.generation)
    LEFT JOIN ${S}.task_outcomes o ON o.task_id = t.task_id AND t.status IN ('completed', 'failed', 'cancelled') AND char_length(o.body) <= q.max_chars
    WHERE q.session_id IS NULL OR EXISTS (SELECT 1 FROM ${S}.sessions s WHERE s.session_id = q.session_id)`,

  /** Whether a v1 session's record exists: why a create that requires it was skipped (see {@link INSERT_TASKS}). */
  sessionExists: `SELECT 1 AS present FROM ${S}.sessions WHERE session_id = $1`,

  getUnscoped: `SELECT ${TASK_COLUMNS} FROM ${S}.tasks t WHERE t.task_id = $1`,

  getOutcome: `SELECT kind, body FROM ${S}.task_outcomes WHERE task_id = $1`,

  /**
   * The conditional writes that settle cancel-vs-complete races, with their outcomes, for the transitions of one batch
   * (see {@link TRANSITION_STEPS}): the rows of the items that applied, in item order (`item_ord`: the item's
   * position from 1), each with `from_status`, the status it had. An item missing from the result did not apply.
   */
  transitions: `WITH ${TRANSITION_STEPS}
    SELECT * FROM upd ORDER BY upd.item_ord`,

  /**
   * {@link SQL.transitions} alone in its batch, as one autocommit statement that also appends one `status` event per
   * applied item, in item order, with gap-free seqs from the feed counter (touched only when something applied). The
   * payload is written as `JSON.stringify` would write `{from, to}`, `at` is the item's now. `event_seq` is each
   * row's event seq.
   */
  transitionsAlone: `WITH ${TRANSITION_STEPS},
    ev AS (SELECT upd.task_id, 'status'::text AS kind, v.to_status AS status, v.now AS at,
        '{"from":' || to_json(upd.from_status::text)::text || ',"to":' || to_json(v.to_status)::text || '}' AS payload,
        row_number() OVER (ORDER BY upd.item_ord) AS ord, upd.item_ord
      FROM upd JOIN v ON v.ord = upd.item_ord),
    ${APPEND_EV}
    SELECT upd.*, f.base + ev.ord AS event_seq FROM upd JOIN ev ON ev.item_ord = upd.item_ord LEFT JOIN f ON true
    ORDER BY upd.item_ord`,

  /** statusMessage-only changes of non-terminal tasks (one task per entry; duplicates are split by the caller). */
  writeMessages: `UPDATE ${S}.tasks t SET status_message = e.message, last_updated_at = e.now
    FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS e(task_id, message, now, ord)
    WHERE t.task_id = e.task_id AND t.status IN ('working', 'input_required')
    RETURNING t.task_id, t.status, e.ord`,

  list: `SELECT ${TASK_COLUMNS} FROM ${S}.tasks t
    WHERE t.owner_key = $1 AND t.generation = $2 AND t.seq > $3
    ORDER BY t.seq LIMIT $4`,

  /** The dashboard's list (`TaskStore.browse`): every filter is optional (`NULL` = any), newest first. */
  browse: `SELECT ${TASK_COLUMNS} FROM ${S}.tasks t
    WHERE t.seq < $1
      AND ($2::text IS NULL OR t.owner_key = $2)
      AND ($3::text[] IS NULL OR t.status = ANY($3::text[]))
      AND ($4::text IS NULL OR t.tool_name = $4)
      AND ($5::bigint IS NULL OR t.created_at >= $5)
      AND ($6::bigint IS NULL OR t.created_at < $6)
      AND ($7::text IS NULL OR strpos(lower(t.task_id || ' ' || t.tool_name || ' ' || coalesce(t.status_message, '')), $7) > 0)
    ORDER BY t.seq DESC LIMIT $8`,

  taskEvents: `SELECT seq, task_id, kind, status, at, payload FROM ${S}.task_events WHERE task_id = $1 ORDER BY seq LIMIT $2`,

  /** A lease is lapsed when `lease_expires_at <= now` (the store's clock), the same boundary as task expiry. */
  startAttempt: `WITH ${NOW('$3')}
    UPDATE ${S}.tasks t SET attempt = t.attempt + 1, lease_owner = $2, lease_expires_at = n.now + $4
    FROM n
    WHERE t.task_id = $1 AND t.status = 'working'
      AND (t.lease_owner IS NULL OR t.lease_owner = $2 OR t.lease_expires_at IS NULL OR t.lease_expires_at <= n.now)
    RETURNING n.now AS store_now, ${TASK_COLUMNS}`,

  /**
   * Locks its rows in task-id order, as the transitions do (a renewal runs beside the write batch, outside it), with
   * `FOR NO KEY UPDATE` — what the UPDATE itself takes — so it does not wait for the `FOR KEY SHARE` of a step or
   * result-chunk write on the same task.
   */
  renewLeases: `WITH ${NOW('$3')},
    c AS (SELECT t.task_id FROM ${S}.tasks t
      WHERE t.task_id = ANY($2::text[]) AND t.lease_owner = $1 AND t.status IN ('working', 'input_required')
      ORDER BY t.task_id FOR NO KEY UPDATE)
    UPDATE ${S}.tasks t SET lease_expires_at = n.now + $4
    FROM n, c
    WHERE t.task_id = c.task_id
    RETURNING t.task_id`,

  /**
   * Runs of unleased working tasks (see the SQLite store), chosen with `FOR UPDATE SKIP LOCKED` like
   * {@link SQL.claimLapsed}: claimers never get the same task and never wait for each other.
   */
  claimRunnable: `WITH ${CLAIM_RUNNABLE_CANDIDATES}
    ${CLAIM_RUNNABLE_UPDATE}`,

  /**
   * {@link SQL.claimRunnable} alone in its batch, as one autocommit statement that also appends each claimed task's
   * `attempt` event (in `seq` order, payload as `JSON.stringify({attempt, leaseOwner})` writes it) with seqs from the
   * feed counter, which it touches only when it claimed something. `event_seq` is each task's event seq.
   */
  claimRunnableAlone: `WITH ${CLAIM_RUNNABLE_CANDIDATES},
    cl AS (${CLAIM_RUNNABLE_UPDATE}),
    ev AS (SELECT cl.task_id, 'attempt'::text AS kind, 'working'::text AS status, cl.store_now AS at,
        '{"attempt":' || cl.attempt || ',"leaseOwner":' || to_json($1::text)::text || '}' AS payload,
        row_number() OVER (ORDER BY cl.seq) AS ord
      FROM cl),
    ${APPEND_EV}
    SELECT cl.*, f.base + ev.ord AS event_seq FROM cl JOIN ev ON ev.task_id = cl.task_id LEFT JOIN f ON true`,

  /**
   * Claiming with `FOR UPDATE SKIP LOCKED`: candidates are locked as they are chosen, and rows another transaction
   * holds (a claim of another worker, a settling run) are skipped instead of waited for, so claimers never queue
   * behind each other and never get the same task. The task row stays the only queue. Two selects, each served by
   * its partial index (`tasks_by_lease`, `tasks_waiting`): running tasks first, then `input_required` tasks whose
   * run waited in place (they hold a lease; a parked one holds none) and whose process is gone — no live
   * registration of the owner (a primary-key probe of `processes` per candidate), or the claimer is that owner (see
   * the SQLite store) — up to what is left of the limit.
   */
  claimLapsed: `WITH ${NOW('$3')}, running AS (
      SELECT t.task_id FROM ${S}.tasks t, n
      WHERE t.status = 'working' AND (t.lease_expires_at IS NULL OR t.lease_expires_at <= n.now)
        AND (t.expires_at IS NULL OR t.expires_at > n.now)
      ORDER BY t.lease_expires_at NULLS FIRST, t.seq
      LIMIT $4
      FOR UPDATE OF t SKIP LOCKED),
    asking AS (
      SELECT t.task_id FROM ${S}.tasks t, n
      WHERE t.status = 'input_required' AND t.lease_owner IS NOT NULL AND t.lease_expires_at <= n.now
        AND (t.expires_at IS NULL OR t.expires_at > n.now)
        AND (t.lease_owner = $1
          OR NOT EXISTS (SELECT 1 FROM ${S}.processes p WHERE p.instance_id = t.lease_owner AND p.expires_at > n.now))
      ORDER BY t.lease_expires_at, t.seq
      LIMIT (SELECT $4 - count(*) FROM running)
      FOR UPDATE OF t SKIP LOCKED),
    c AS (SELECT task_id FROM running UNION ALL SELECT task_id FROM asking)
    UPDATE ${S}.tasks t SET lease_owner = $1, lease_expires_at = n.now + $2
    FROM c, n
    WHERE t.task_id = c.task_id
    RETURNING ${TASK_COLUMNS}`,

  /** See the SQLite store: only from `working`, only for the lease holder, only before the TTL; run not counted unless `$5` (hold). */
  parkForInput: `UPDATE ${S}.tasks t SET
      status = 'input_required',
      status_message = $3,
      last_updated_at = $4,
      lease_owner = CASE WHEN $5::boolean THEN t.lease_owner ELSE NULL END,
      lease_expires_at = CASE WHEN $5::boolean THEN t.lease_expires_at ELSE NULL END,
      attempt = CASE WHEN $5::boolean THEN t.attempt ELSE GREATEST(t.attempt - 1, 0) END
    WHERE t.task_id = $1 AND t.status = 'working' AND t.lease_owner = $2 AND (t.expires_at IS NULL OR t.expires_at > $4)
    RETURNING ${TASK_COLUMNS}`,

  /** Keys are unique for a task's lifetime (SEP-2663 E23): a taken key (or one repeated in `$3`) inserts nothing. */
  insertInputRequests: `INSERT INTO ${S}.input_requests (task_id, key, request, response, state, created_at, answered_at)
    SELECT $1, r.key, r.request, NULL, 'pending', $2, NULL
    FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS r(key, request, ord)
    ORDER BY r.ord
    ON CONFLICT (task_id, key) DO NOTHING
    RETURNING key`,

  listInputRequests: `SELECT ${INPUT_REQUEST_COLUMNS} FROM ${S}.input_requests WHERE task_id = $1 ORDER BY created_at, position`,

  /** The task, locked, only while it waits for input and has not expired at `$2`: concurrent answers queue here. */
  waitingTask: `SELECT ${TASK_COLUMNS} FROM ${S}.tasks t
    WHERE t.task_id = $1 AND t.status = 'input_required' AND (t.expires_at IS NULL OR t.expires_at > $2)
    FOR UPDATE`,

  /** Only a `pending` request changes: of two answers to one key, exactly one applies. Keys in `$2` are distinct. */
  settleInputRequests: `UPDATE ${S}.input_requests r SET state = $4, response = a.response, answered_at = $5
    FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS a(key, response, ord)
    WHERE r.task_id = $1 AND r.key = a.key AND r.state = 'pending'
    RETURNING r.key, a.ord`,

  hasPendingInput: `SELECT EXISTS (SELECT 1 FROM ${S}.input_requests WHERE task_id = $1 AND state = 'pending') AS pending`,

  /** See the SQLite store: records the change; with `$2` (nothing pending) resumes to `working`, lease untouched. */
  touchWaiting: `UPDATE ${S}.tasks t SET
      status = CASE WHEN $2::boolean THEN 'working' ELSE t.status END,
      status_message = CASE WHEN $3::boolean THEN $4 ELSE t.status_message END,
      last_updated_at = $5
    WHERE t.task_id = $1 AND t.status = 'input_required'
    RETURNING ${TASK_COLUMNS}`,

  /** The input-timeout sweep (partial index `tasks_waiting`); expiry judged at `$1` as in the SQLite store. */
  waitingSince: `SELECT ${TASK_COLUMNS} FROM ${S}.tasks t
    WHERE t.status = 'input_required' AND t.last_updated_at <= $1 AND (t.expires_at IS NULL OR t.expires_at > $1)
    ORDER BY t.last_updated_at, t.seq LIMIT $2`,

  getStep: `SELECT value FROM ${S}.task_steps WHERE task_id = $1 AND name = $2`,

  getToolState: `SELECT value FROM ${S}.tool_state WHERE owner_key = $1 AND tool = $2 AND key = $3`,

  /** Replaces a key, or adds one while the owner holds fewer than $6 for the tool (no row returned: refused). */
  putToolState: `INSERT INTO ${S}.tool_state (owner_key, tool, key, value, updated_at)
    SELECT $1, $2, $3, $4, $5
    WHERE EXISTS (SELECT 1 FROM ${S}.tool_state WHERE owner_key = $1 AND tool = $2 AND key = $3)
       OR (SELECT count(*) FROM ${S}.tool_state WHERE owner_key = $1 AND tool = $2) < $6
    ON CONFLICT (owner_key, tool, key) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at
    RETURNING 1 AS written`,

  /**
   * First write wins; with `$5`, written while the task is `working` or `input_required` under that lease owner or
   * under none (a run that parked while its step was under way). `FOR KEY SHARE` holds the task row against a
   * concurrent delete (expiry) until commit, so a step of a task deleted meanwhile is dropped instead of violating the
   * foreign key. It does not wait for a takeover's uncommitted `UPDATE`: a stale run's write may commit beside one,
   * which is harmless — the new run's own write then answers the value that won, and every run goes on with it.
   */
  putStep: `INSERT INTO ${S}.task_steps (task_id, name, value, created_at)
    SELECT t.task_id, $2, $3, (SELECT COALESCE($4::bigint, ${S}.now_ms())) FROM ${S}.tasks t
    WHERE t.task_id = $1 AND ($5::text IS NULL OR ((t.lease_owner = $5 OR t.lease_owner IS NULL) AND t.status IN ('working', 'input_required')))
    FOR KEY SHARE OF t
    ON CONFLICT (task_id, name) DO NOTHING
    RETURNING value`,

  /**
   * A run's journal lookup (`TaskSteps.lookupStep`: `$4` false, the task run under `$3`) and, after a `putStep` that
   * inserted nothing, what won (`$4` true: under that owner or none, as `putStep` writes; a new statement, so under
   * READ COMMITTED it sees the row of the concurrent write that won): whether the condition holds (any task that
   * exists, with no owner given) and the step's value, if any.
   */
  lookupStep: `SELECT EXISTS (SELECT 1 FROM ${S}.tasks WHERE task_id = $1
        AND ($3::text IS NULL OR ((lease_owner = $3 OR ($4::boolean AND lease_owner IS NULL)) AND status IN ('working', 'input_required')))) AS held,
      (SELECT value FROM ${S}.task_steps WHERE task_id = $1 AND name = $2) AS value`,

  /**
   * Expire and delete due tasks: children cascade, and the task's events go too (retention; the `expired` event the
   * batch appends afterwards stays as a tombstone). `SKIP LOCKED`: two sweepers never wait for or double-count each
   * other, and a task being written right now is simply taken by the next sweep. (An event another operation of
   * the same batch staged for the task is appended after this delete and outlives it.)
   */
  expireDue: `WITH ${NOW('$1')}, due AS (
      SELECT t.task_id FROM ${S}.tasks t, n
      WHERE t.expires_at IS NOT NULL AND t.expires_at <= n.now
      ORDER BY t.expires_at, t.seq LIMIT $2
      FOR UPDATE OF t SKIP LOCKED),
    del AS (DELETE FROM ${S}.tasks t USING due WHERE t.task_id = due.task_id RETURNING t.task_id, t.status, t.expires_at, t.seq),
    history AS (DELETE FROM ${S}.task_events e USING del WHERE e.task_id = del.task_id)
    SELECT del.task_id, del.status, n.now AS store_now FROM del, n ORDER BY del.expires_at, del.seq`,

  /** Tombstones past their retention (`$1` = the cutoff on the store's clock), oldest first, at most `$2`. */
  pruneTombstones: `WITH ${NOW('$1')}
    DELETE FROM ${S}.task_events WHERE seq IN (
      SELECT e.seq FROM ${S}.task_events e, n WHERE e.kind = 'expired' AND e.at <= n.now - $3 ORDER BY e.at LIMIT $2)`,

  /** The lease lapses now on the store's clock; the owner stays, so the next claim is a recovery decision. */
  releaseLeases: `WITH ${NOW('$3')}
    UPDATE ${S}.tasks t SET lease_expires_at = n.now
    FROM n
    WHERE t.task_id = ANY($2::text[]) AND t.lease_owner = $1 AND t.status = 'working'
    RETURNING t.task_id, n.now AS store_now`,

  /** Runs that never started (or a run that waited in place, given back) are not counted; see `releaseUnstarted`. */
  releaseUnstarted: `WITH ${NOW('$3')}
    UPDATE ${S}.tasks t SET attempt = GREATEST(t.attempt - 1, 0), lease_owner = NULL, lease_expires_at = NULL
    FROM n
    WHERE t.task_id = ANY($2::text[]) AND t.lease_owner = $1 AND t.status IN ('working', 'input_required')
    RETURNING t.task_id, t.status, n.now AS store_now`,

  /** Every lease of one owner lapses now, a run's that waits in place included (see `releaseLeasesOf`). */
  releaseLeasesOf: `WITH ${NOW('$2')}
    UPDATE ${S}.tasks t SET lease_expires_at = n.now
    FROM n
    WHERE t.lease_owner = $1 AND t.status IN ('working', 'input_required') AND t.lease_expires_at > n.now
    RETURNING t.task_id, t.status, n.now AS store_now`,

  /** Register an instance id nobody holds; nothing when a row exists (waits for a concurrent inserter's commit). */
  insertProcess: `WITH ${NOW('$7')}
    INSERT INTO ${S}.processes (instance_id, role, token, host, pid, settings_digest, started_at, heartbeat_at, expires_at)
    SELECT $1, $2, $3, $4, $5, $6, n.now, n.now, n.now + $8 FROM n
    ON CONFLICT (instance_id) DO NOTHING RETURNING instance_id`,
  /** The row of an instance id, locked for the registration that judges it, with the store's now. */
  lockProcess: `SELECT p.*, d.draining_since, COALESCE($2::bigint, ${S}.now_ms()) AS store_now FROM ${S}.processes p
    LEFT JOIN ${S}.draining_processes d ON d.instance_id = p.instance_id AND d.token = p.token
    WHERE p.instance_id = $1 FOR UPDATE OF p`,
  replaceProcess: `WITH ${NOW('$7')}
    UPDATE ${S}.processes p SET role = $2, token = $3, host = $4, pid = $5, settings_digest = $6, started_at = n.now,
      heartbeat_at = n.now, expires_at = n.now + $8
    FROM n WHERE p.instance_id = $1`,
  heartbeatProcess: `WITH ${NOW('$3')}
    UPDATE ${S}.processes p SET heartbeat_at = n.now, expires_at = n.now + $4 FROM n WHERE p.instance_id = $1 AND p.token = $2 RETURNING p.instance_id`,
  deleteProcess: `DELETE FROM ${S}.processes WHERE instance_id = $1 AND token = $2`,
  /** Every registration with its draining mark (only the mark of the token that holds the row: see migration 14). */
  listProcesses: `WITH ${NOW('$1')} SELECT p.*, d.draining_since, n.now AS store_now FROM n JOIN ${S}.processes p ON true
    LEFT JOIN ${S}.draining_processes d ON d.instance_id = p.instance_id AND d.token = p.token ORDER BY p.instance_id`,
  /**
   * Mark the registration `$1` held by token `$2` draining at the store's now; a mark of the same token keeps its
   * first time. No row, nothing written, when `$2` does not hold `$1`.
   */
  markProcessDraining: `WITH ${NOW('$3')}
    INSERT INTO ${S}.draining_processes AS d (instance_id, token, draining_since)
    SELECT p.instance_id, p.token, n.now FROM n JOIN ${S}.processes p ON p.instance_id = $1 AND p.token = $2
    ON CONFLICT (instance_id) DO UPDATE SET token = excluded.token,
      draining_since = CASE WHEN d.token = excluded.token THEN d.draining_since ELSE excluded.draining_since END
    RETURNING d.instance_id`,
  /** A new registration of an id does not drain: the mark of an earlier token goes. */
  clearProcessDraining: `DELETE FROM ${S}.draining_processes WHERE instance_id = $1 AND token <> $2`,
  /** Lapsed registrations, deleted; `SKIP LOCKED` between concurrent reapers. */
  reapProcesses: `WITH ${NOW('$1')}, lapsed AS (
      SELECT p.instance_id FROM ${S}.processes p, n WHERE p.expires_at <= n.now AND p.instance_id IS DISTINCT FROM $2::text
      FOR UPDATE OF p SKIP LOCKED)
    DELETE FROM ${S}.processes p USING lapsed WHERE p.instance_id = lapsed.instance_id RETURNING p.instance_id`,

  storeNow: `SELECT COALESCE($1::bigint, ${S}.now_ms()) AS now`,
});
