import type Database from 'better-sqlite3';

export type { EventRow, InputRequestRow, TaskRow } from '../codec.js';

/**
 * Every data statement of the SQLite store, in one place so that the conditions that settle races can be
 * reviewed together. Schema lives in `migrations.ts`. Parameters are named (`@name`); lists of ids or
 * statuses are bound as one JSON array and expanded with `json_each`, so each statement is prepared once. On the
 * round trip's hot path (`transition`, `claimRunnable`) an `UPDATE … RETURNING` has no subquery: one there (that
 * expansion, or the claim's choice of candidates) doubled its cost (see each).
 */

/** Columns of a task row, in the order {@link TaskRow} expects. */
const TASK_COLUMNS = `task_id, owner_key, generation, protocol_version, tool_name, arguments, client_capabilities,
  progress_token, status, status_message, created_at, last_updated_at, ttl_ms, poll_interval_ms, expires_at, seq,
  attempt, lease_owner, lease_expires_at, idempotency_key, request_digest`;

const INPUT_REQUEST_COLUMNS = 'task_id, key, request, response, state, created_at, answered_at';

/** Not expired at `@now`: the condition of writes that must not apply to an expired task (claim, park, answer). */
const VISIBLE = '(expires_at IS NULL OR expires_at > @now)';

export const SQL = Object.freeze({
  begin: 'BEGIN IMMEDIATE',
  commit: 'COMMIT',
  rollback: 'ROLLBACK',
  savepoint: 'SAVEPOINT op',
  release: 'RELEASE op',
  rollbackTo: 'ROLLBACK TO op',

  /** The task's `seq` is the seq of its `created` event: monotonic, unique and never reused, at no extra write. */
  insertTask: `INSERT INTO tasks (task_id, owner_key, generation, protocol_version, tool_name, arguments,
      client_capabilities, progress_token, status, status_message, created_at, last_updated_at, ttl_ms,
      poll_interval_ms, expires_at, seq, attempt, lease_owner, lease_expires_at, idempotency_key, request_digest)
    VALUES (@taskId, @ownerKey, @generation, @protocolVersion, @toolName, @arguments, @clientCapabilities,
      @progressToken, 'working', @statusMessage, @createdAt, @createdAt, @ttlMs, @pollIntervalMs, @expiresAt, @seq,
      @attempt, @leaseOwner, @leaseExpiresAt, @idempotencyKey, @requestDigest)`,

  idempotencyTaken: 'SELECT 1 AS taken FROM tasks WHERE owner_key = @ownerKey AND idempotency_key = @idempotencyKey',

  /** Large results (issue 10 §2): replaced as a whole, read one chunk at a time. */
  taskExists: 'SELECT 1 AS present FROM tasks WHERE task_id = @taskId',
  taskRunUnder: "SELECT 1 AS present FROM tasks WHERE task_id = @taskId AND lease_owner = @leaseOwner AND status IN ('working', 'input_required')",
  deleteResultChunks: 'DELETE FROM result_chunks WHERE task_id = @taskId',
  discardUnservedResultChunks: `DELETE FROM result_chunks WHERE task_id = @taskId AND EXISTS (SELECT 1 FROM tasks t WHERE t.task_id = @taskId AND (t.status = 'cancelled'
      OR (t.status IN ('completed', 'failed') AND EXISTS (SELECT 1 FROM task_outcomes o WHERE o.task_id = t.task_id AND o.kind = 'error'))))`,
  /** Whether `discardUnservedResultChunks` has anything to look at (a cancel without a large result: no write). */
  hasResultChunks: 'SELECT 1 AS present FROM result_chunks WHERE task_id = @taskId LIMIT 1',
  insertResultChunk: 'INSERT INTO result_chunks (task_id, chunk_index, data) VALUES (@taskId, @index, @data)',
  readResultChunk: 'SELECT data FROM result_chunks WHERE task_id = @taskId AND chunk_index = @index',

  /** Quotas (issue 10 §2): admissions leave the count once they are older than the window. */
  pruneAdmissions: 'DELETE FROM owner_creates WHERE created_at <= @cutoff',
  windowAdmissions: 'SELECT COUNT(*) AS count, MIN(created_at) AS oldest FROM owner_creates WHERE owner_key = @ownerKey',
  /** Active tasks of the owner: non-terminal and not expired (see `TaskStore.admitCreate`). */
  activeOfOwner: `SELECT COUNT(*) AS count FROM tasks
    WHERE owner_key = @ownerKey AND status IN ('working', 'input_required') AND (expires_at IS NULL OR expires_at > @now)`,
  recordAdmission: 'INSERT OR REPLACE INTO owner_creates (task_id, owner_key, created_at) VALUES (@taskId, @ownerKey, @now)',

  /**
   * Scoped by owner and generation only: read visibility after `expiresAt` is judged above the store; with
   * `@session`, only while that v1 session's record exists (`TaskScope.requireSession`).
   */
  getScoped: `SELECT ${TASK_COLUMNS} FROM tasks
    WHERE task_id = @taskId AND owner_key = @ownerKey AND (@generation IS NULL OR generation = @generation)
      AND (@session IS NULL OR EXISTS (SELECT 1 FROM sessions WHERE session_id = @session))`,

  /** Whether a v1 session's record exists (a create with `NewTask.requireSession`). */
  sessionExists: 'SELECT 1 AS present FROM sessions WHERE session_id = @sessionId',

  getUnscoped: `SELECT ${TASK_COLUMNS} FROM tasks WHERE task_id = @taskId`,

  getOutcome: 'SELECT kind, body FROM task_outcomes WHERE task_id = @taskId',

  currentStatus: 'SELECT status FROM tasks WHERE task_id = @taskId',

  /**
   * The conditional write that settles cancel-vs-complete races: it applies only while the status is one `from`
   * allows (and, when `@leaseOwner` is set, while that instance holds the lease). Only the two non-terminal statuses
   * are ever sources (`ALLOWED_TRANSITIONS`), so `from` is two flags. Not `status IN (SELECT value FROM
   * json_each(@from))`: with the RETURNING clause that subquery made the statement cost about 2× (69–73 against
   * 34–38 µs, `bench/sqlite-statements.mjs` on a 100k-row table, issue 25).
   */
  transition: `UPDATE tasks SET
      status = @to,
      status_message = CASE WHEN @setMessage = 1 THEN @statusMessage ELSE status_message END,
      last_updated_at = @now,
      lease_owner = CASE WHEN @releaseLease = 1 THEN NULL ELSE lease_owner END,
      lease_expires_at = CASE WHEN @releaseLease = 1 THEN NULL ELSE lease_expires_at END
    WHERE task_id = @taskId
      AND ((status = 'working' AND @fromWorking = 1) OR (status = 'input_required' AND @fromInputRequired = 1))
      AND (@leaseOwner IS NULL OR lease_owner = @leaseOwner)
    RETURNING ${TASK_COLUMNS}`,

  insertOutcome: 'INSERT INTO task_outcomes (task_id, kind, body) VALUES (@taskId, @kind, @body)',

  writeMessage: `UPDATE tasks SET status_message = @statusMessage, last_updated_at = @now
    WHERE task_id = @taskId AND status IN ('working', 'input_required')
    RETURNING status`,

  list: `SELECT ${TASK_COLUMNS} FROM tasks
    WHERE owner_key = @ownerKey AND generation = @generation AND seq > @afterSeq
    ORDER BY seq LIMIT @limit`,

  /** The dashboard's list (`TaskStore.browse`): every filter is optional (`NULL` = any), newest first. */
  browse: `SELECT ${TASK_COLUMNS} FROM tasks
    WHERE seq < @beforeSeq
      AND (@ownerKey IS NULL OR owner_key = @ownerKey)
      AND (@statuses IS NULL OR status IN (SELECT value FROM json_each(@statuses)))
      AND (@toolName IS NULL OR tool_name = @toolName)
      AND (@createdFrom IS NULL OR created_at >= @createdFrom)
      AND (@createdTo IS NULL OR created_at < @createdTo)
      AND (@text IS NULL OR instr(lower(task_id || ' ' || tool_name || ' ' || coalesce(status_message, '')), @text) > 0)
    ORDER BY seq DESC LIMIT @limit`,

  taskEvents: 'SELECT seq, task_id, kind, status, at, payload FROM task_events WHERE task_id = @taskId ORDER BY seq LIMIT @limit',

  /** A lease is lapsed when `lease_expires_at <= now` (the same boundary as task expiry). */
  startAttempt: `UPDATE tasks SET attempt = attempt + 1, lease_owner = @leaseOwner, lease_expires_at = @leaseExpiresAt
    WHERE task_id = @taskId AND status = 'working'
      AND (lease_owner IS NULL OR lease_owner = @leaseOwner OR lease_expires_at IS NULL OR lease_expires_at <= @now)
    RETURNING ${TASK_COLUMNS}`,

  /**
   * Unleased working tasks, oldest first: the candidates of `claimRunnable`, chosen and started by
   * {@link SQL.claimRunnable} in the same write transaction (under the write lock, so two processes never start the
   * same one). `lease_owner IS NULL` implies `lease_expires_at IS NULL` (every write clears both together), which
   * lets `tasks_by_lease (status, lease_expires_at)` find them.
   */
  runnableCandidates: `SELECT task_id FROM tasks
    WHERE status = 'working' AND lease_expires_at IS NULL AND lease_owner IS NULL AND ${VISIBLE}
    ORDER BY seq LIMIT @limit`,

  /**
   * Start the run of one candidate of {@link SQL.runnableCandidates}: the lease and the counted run. It applies only
   * to a working, unleased, unexpired task (what makes a candidate; `lease_expires_at IS NULL` follows from
   * `lease_owner IS NULL`), so a row that stopped being one is left alone: nothing else writes inside the
   * transaction, but the statement does not rely on it. One UPDATE per row, not `UPDATE … WHERE task_id IN (SELECT …)
   * RETURNING`: that form cost about 2× for a claim of 3 tasks (252–260 against 113–118 µs,
   * `bench/sqlite-statements.mjs` on a 100k-row table, issue 25).
   */
  claimRunnable: `UPDATE tasks SET attempt = attempt + 1, lease_owner = @leaseOwner, lease_expires_at = @leaseExpiresAt
    WHERE task_id = @taskId AND status = 'working' AND lease_owner IS NULL AND ${VISIBLE}
    RETURNING ${TASK_COLUMNS}`,

  renewLeases: `UPDATE tasks SET lease_expires_at = @leaseExpiresAt
    WHERE task_id IN (SELECT value FROM json_each(@taskIds)) AND lease_owner = @leaseOwner
      AND status IN ('working', 'input_required')
    RETURNING task_id`,

  /**
   * One statement, so the candidates are chosen and taken under the same write lock: two processes can never
   * claim the same task. Tasks already past their TTL are left to the sweeper. An `input_required` task is taken
   * only when its run waited in place (it holds a lease; a parked one holds none) and that run's process is gone:
   * its owner has no live registration (`expires_at > now`, the registry's rule; a dead process's lapses within three
   * beats) — a live one whose lease merely lapsed (a stall) keeps its wait and renews it — unless the claimer is
   * that owner itself (its own run goes on; one restarted under the id recovers its predecessor's wait).
   */
  claimLapsed: `UPDATE tasks SET lease_owner = @leaseOwner, lease_expires_at = @leaseExpiresAt
    WHERE task_id IN (
      SELECT task_id FROM tasks
      WHERE (
          (status = 'working' AND (lease_expires_at IS NULL OR lease_expires_at <= @now))
          OR (status = 'input_required' AND lease_owner IS NOT NULL AND lease_expires_at <= @now
            AND (lease_owner = @leaseOwner
              OR NOT EXISTS (SELECT 1 FROM processes p WHERE p.instance_id = tasks.lease_owner AND p.expires_at > @now)))
        ) AND ${VISIBLE}
      ORDER BY status = 'input_required', lease_expires_at, seq LIMIT @limit)
    RETURNING ${TASK_COLUMNS}`,

  /**
   * Parks a running task for input. Applies only from `working`, only while `@leaseOwner` holds the lease and
   * only before the TTL; the lease is released and the parking run is not counted (`attempt` never below 0) —
   * unless `@hold = 1`: a run that waits for its answers in place keeps its lease and its count.
   * Whether the lease already lapsed does not matter: until another process claims it, the holder's write is as
   * safe as a completion (see `transition`), and a claim takes the owner away, which makes this miss.
   */
  parkForInput: `UPDATE tasks SET
      status = 'input_required',
      status_message = @statusMessage,
      last_updated_at = @now,
      lease_owner = CASE WHEN @hold = 1 THEN lease_owner ELSE NULL END,
      lease_expires_at = CASE WHEN @hold = 1 THEN lease_expires_at ELSE NULL END,
      attempt = CASE WHEN @hold = 1 THEN attempt ELSE MAX(attempt - 1, 0) END
    WHERE task_id = @taskId AND status = 'working' AND lease_owner = @leaseOwner AND ${VISIBLE}
    RETURNING ${TASK_COLUMNS}`,

  /**
   * Keys are unique for a task's lifetime (SEP-2663 E23): a taken key inserts nothing (`changes = 0`), and the
   * caller then fails its whole operation instead of overwriting an answered or superseded request.
   */
  insertInputRequest: `INSERT INTO input_requests (task_id, key, request, response, state, created_at, answered_at)
    VALUES (@taskId, @key, @request, NULL, 'pending', @now, NULL)
    ON CONFLICT (task_id, key) DO NOTHING`,

  /** Creation order; `rowid` breaks ties of one millisecond (and of one batch) by insertion order. */
  listInputRequests: `SELECT ${INPUT_REQUEST_COLUMNS} FROM input_requests WHERE task_id = @taskId
    ORDER BY created_at, rowid`,

  /** The task, only while it waits for input and has not expired at `@now`. */
  waitingTask: `SELECT ${TASK_COLUMNS} FROM tasks
    WHERE task_id = @taskId AND status = 'input_required' AND ${VISIBLE}`,

  /**
   * The conditional write that settles concurrent answers: only a `pending` request changes, so of two answers
   * to one key (from any processes) exactly one applies and the other sees `changes = 0`.
   */
  settleInputRequest: `UPDATE input_requests SET state = @state, response = @response, answered_at = @now
    WHERE task_id = @taskId AND key = @key AND state = 'pending'`,

  hasPendingInput: `SELECT EXISTS (SELECT 1 FROM input_requests WHERE task_id = @taskId AND state = 'pending') AS pending`,

  /**
   * Records that a waiting task's requests changed; with `@resume = 1` (nothing pending any more) it also moves
   * `input_required → working`. The lease is left as it is: a parked task has none, so `claimLapsed` in any process
   * starts the next run; a run waiting in place (`parkForInput` with `@hold`) keeps its own and goes on — and if it
   * died meanwhile, its lapsed lease makes the task claimable like any other lapsed run.
   */
  touchWaiting: `UPDATE tasks SET
      status = CASE WHEN @resume = 1 THEN 'working' ELSE status END,
      status_message = CASE WHEN @setMessage = 1 THEN @statusMessage ELSE status_message END,
      last_updated_at = @now
    WHERE task_id = @taskId AND status = 'input_required'
    RETURNING ${TASK_COLUMNS}`,

  /**
   * The input-timeout sweep (served by the partial index `tasks_waiting`, migration 2). The port gives no `now`,
   * so "unexpired" is judged at `@before` (<= now): a task that expired in between may be listed, which is
   * harmless because the expiry sweeper deletes it anyway.
   */
  waitingSince: `SELECT ${TASK_COLUMNS} FROM tasks
    WHERE status = 'input_required' AND last_updated_at <= @before AND (expires_at IS NULL OR expires_at > @before)
    ORDER BY last_updated_at, seq LIMIT @limit`,

  getStep: 'SELECT value FROM task_steps WHERE task_id = @taskId AND name = @name',

  getToolState: 'SELECT value FROM tool_state WHERE owner_key = @ownerKey AND tool = @tool AND key = @key',

  /** Replaces a key, or adds one while the owner holds fewer than @maxKeys for the tool (no row: refused). */
  putToolState: `INSERT INTO tool_state (owner_key, tool, key, value, updated_at)
    SELECT @ownerKey, @tool, @key, @value, @now
    WHERE EXISTS (SELECT 1 FROM tool_state WHERE owner_key = @ownerKey AND tool = @tool AND key = @key)
       OR (SELECT count(*) FROM tool_state WHERE owner_key = @ownerKey AND tool = @tool) < @maxKeys
    ON CONFLICT (owner_key, tool, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,

  /**
   * First write wins; a step of a task that no longer exists is dropped instead of violating the foreign key, and so
   * is one of a run whose task another owner holds or that ended (with `@leaseOwner`: written while the task is
   * `working` or `input_required` under that owner or under none — a run that parked while its step was under way).
   * `RETURNING` answers only for a row this statement inserted.
   */
  putStep: `INSERT INTO task_steps (task_id, name, value, created_at)
    SELECT @taskId, @name, @value, @now WHERE EXISTS (SELECT 1 FROM tasks WHERE task_id = @taskId
      AND (@leaseOwner IS NULL OR ((lease_owner = @leaseOwner OR lease_owner IS NULL) AND status IN ('working', 'input_required'))))
    ON CONFLICT (task_id, name) DO NOTHING
    RETURNING value`,

  /**
   * A run's journal lookup (`TaskSteps.lookupStep`: `@unheld` 0, the task run under `@leaseOwner`) and, after a
   * `putStep` that inserted nothing, what won (`@unheld` 1: under that owner or none, as `putStep` writes): whether the
   * condition holds (any task that exists, with no owner given) and the step's value, if any.
   */
  lookupStep: `SELECT EXISTS (SELECT 1 FROM tasks WHERE task_id = @taskId
        AND (@leaseOwner IS NULL OR ((lease_owner = @leaseOwner OR (@unheld = 1 AND lease_owner IS NULL)) AND status IN ('working', 'input_required')))) AS held,
      (SELECT value FROM task_steps WHERE task_id = @taskId AND name = @name) AS value`,

  /** Steps handed to `create` (the task row was inserted just before, so no existence check is needed). */
  insertStep: 'INSERT INTO task_steps (task_id, name, value, created_at) VALUES (@taskId, @name, @value, @now)',

  dueForExpiry: `SELECT task_id, status FROM tasks WHERE expires_at IS NOT NULL AND expires_at <= @now
    ORDER BY expires_at, seq LIMIT @limit`,

  /** Outcome, steps and input requests go with it (ON DELETE CASCADE); events by {@link SQL.deleteTaskEvents}. */
  deleteTask: 'DELETE FROM tasks WHERE task_id = @taskId',

  /** The task's history, but the `expired` tombstone just appended (retention; served by `task_events_by_task`). */
  deleteTaskEvents: "DELETE FROM task_events WHERE task_id = @taskId AND kind <> 'expired'",

  /** Tombstones past their retention, oldest first (served by the partial index `task_events_expired`). */
  pruneTombstones: `DELETE FROM task_events WHERE seq IN (
      SELECT seq FROM task_events WHERE kind = 'expired' AND at <= @cutoff ORDER BY at LIMIT @limit)`,

  /** The lease lapses now; the owner stays, so the next claim is a recovery decision (see `releaseLeases`). */
  releaseLeases: `UPDATE tasks SET lease_expires_at = @now
    WHERE task_id IN (SELECT value FROM json_each(@taskIds)) AND lease_owner = @leaseOwner AND status = 'working'
    RETURNING task_id`,

  /** Runs that never started (or a run that waited in place, given back) are not counted; see `releaseUnstarted`. */
  releaseUnstarted: `UPDATE tasks SET attempt = MAX(attempt - 1, 0), lease_owner = NULL, lease_expires_at = NULL
    WHERE task_id IN (SELECT value FROM json_each(@taskIds)) AND lease_owner = @leaseOwner AND status IN ('working', 'input_required')
    RETURNING task_id, status`,

  /**
   * Every lease of one owner lapses now, a run's that waits in place included (the takeover of a process restarted
   * or reaped; see `releaseLeasesOf`).
   */
  releaseLeasesOf: `UPDATE tasks SET lease_expires_at = @now
    WHERE lease_owner = @leaseOwner AND status IN ('working', 'input_required') AND lease_expires_at > @now
    RETURNING task_id, status`,

  getProcess: `SELECT p.*, d.draining_since FROM processes p
    LEFT JOIN draining_processes d ON d.instance_id = p.instance_id AND d.token = p.token WHERE p.instance_id = @instanceId`,
  /** Every registration with its draining mark (only the mark of the token that holds the row: see migration 13). */
  listProcesses: `SELECT p.*, d.draining_since FROM processes p
    LEFT JOIN draining_processes d ON d.instance_id = p.instance_id AND d.token = p.token ORDER BY p.instance_id`,
  /** Mark a registration draining; a mark of the same token keeps its first time (nothing when the token does not hold the id). */
  markProcessDraining: `INSERT INTO draining_processes (instance_id, token, draining_since)
    SELECT instance_id, token, @now FROM processes WHERE instance_id = @instanceId AND token = @token
    ON CONFLICT (instance_id) DO UPDATE SET token = excluded.token,
      draining_since = CASE WHEN draining_processes.token = excluded.token THEN draining_processes.draining_since ELSE excluded.draining_since END`,
  /** A new registration of an id does not drain: the mark of an earlier token goes. */
  clearProcessDraining: 'DELETE FROM draining_processes WHERE instance_id = @instanceId AND token <> @token',
  lapsedProcesses: 'SELECT instance_id FROM processes WHERE expires_at <= @now ORDER BY instance_id',
  upsertProcess: `INSERT INTO processes (instance_id, role, token, host, pid, settings_digest, started_at, heartbeat_at, expires_at)
    VALUES (@instanceId, @role, @token, @host, @pid, @settingsDigest, @now, @now, @now + @ttlMs)
    ON CONFLICT (instance_id) DO UPDATE SET role = excluded.role, token = excluded.token, host = excluded.host, pid = excluded.pid,
      settings_digest = excluded.settings_digest, started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at`,
  heartbeatProcess: 'UPDATE processes SET heartbeat_at = @now, expires_at = @now + @ttlMs WHERE instance_id = @instanceId AND token = @token',
  deleteProcess: 'DELETE FROM processes WHERE instance_id = @instanceId AND token = @token',
  deleteLapsedProcess: 'DELETE FROM processes WHERE instance_id = @instanceId AND expires_at <= @now',

  /** `seq` is the row id (`INTEGER PRIMARY KEY`): the caller reads it from the run's `lastInsertRowid`, not RETURNING. */
  appendEvent: `INSERT INTO task_events (task_id, kind, status, at, payload)
    VALUES (@taskId, @kind, @status, @at, @payload)`,

  eventsAfter: 'SELECT seq, task_id, kind, status, at, payload FROM task_events WHERE seq > @afterSeq ORDER BY seq LIMIT @limit',

  /** The AUTOINCREMENT high-water mark, not `MAX(seq)`: retention may have deleted the newest events. */
  lastEventSeq: "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'task_events'), 0) AS seq",
});

/** Names of {@link SQL} statements. */
export type StatementName = keyof typeof SQL;

/** Every {@link SQL} statement prepared on one connection. */
export type Statements = Record<StatementName, Database.Statement>;
