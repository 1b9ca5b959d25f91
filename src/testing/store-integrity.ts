import type { TaskEventKind } from '../core/store.js';
import type { TaskStatus } from '../core/task.js';

/** The tables of a task store, as both backends name them. */
export const STORE_TABLES = ['tasks', 'task_outcomes', 'input_requests', 'task_steps', 'task_events'] as const;

/** One table's rows as the driver returns them (column name → value). */
export type StoreRow = Record<string, unknown>;

/** A consistent snapshot of every table of a store (read in one transaction). */
export type StoreSnapshot = Record<(typeof STORE_TABLES)[number], StoreRow[]>;

/** Reads a {@link StoreSnapshot}; see {@link sqliteSnapshot} and {@link postgresSnapshot}. */
export type SnapshotSource = () => Promise<StoreSnapshot>;

const STATUSES: ReadonlySet<string> = new Set(['working', 'input_required', 'completed', 'failed', 'cancelled']);
/** Every event kind, one key each: a kind added to `TaskEventKind` and not here fails to compile. */
const EVENT_KIND_KEYS: Record<TaskEventKind, true> = { created: true, status: true, message: true, attempt: true, input: true, expired: true, released: true };
const EVENT_KINDS: ReadonlySet<string> = new Set(Object.keys(EVENT_KIND_KEYS));
const INPUT_STATES: ReadonlySet<string> = new Set(['pending', 'answered', 'superseded']);

/** Whether `text` is a stored JSON column: JSON text, or an encrypted value (`enc1:…`, see the field cipher). */
function isStoredJson(text: unknown): boolean {
  if (typeof text !== 'string') return false;
  if (text.startsWith('enc1:')) return /^enc1:[0-9a-f]{16}:[A-Za-z0-9_-]+$/.test(text);
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

const num = (value: unknown): number => (typeof value === 'string' ? Number(value) : (value as number));

/**
 * Check a store snapshot against the invariants the store port promises, whatever was sent to the server:
 * - every task row: a known status and generation, JSON (or encrypted) arguments and capabilities, `createdAt ≤
 *   lastUpdatedAt`, `expiresAt = createdAt + ttlMs` (both null or neither), `attempt ≥ 0`, a unique `seq`;
 * - outcomes: present exactly when the status needs one — `completed` a `result`, `failed` a `result` or an `error`,
 *   anything else none;
 * - `input_required` has at least one pending input request and `working` none; `pending` requests have no answer,
 *   `answered` ones have one;
 * - no orphans: every outcome, input request and step belongs to an existing task; every event belongs to an
 *   existing task or to one that was deleted by expiry (an `expired` event, which outlives its task on purpose);
 * - events: known kinds and statuses, unique seqs, a `created` event for every task, and the newest event of a task
 *   carries its current status.
 * @returns every violation found, one line each (empty: the store is sound).
 */
export function checkStoreIntegrity(snapshot: StoreSnapshot): string[] {
  const problems: string[] = [];
  const tasks = new Map<string, StoreRow>();
  const seqs = new Set<number>();
  for (const row of snapshot.tasks) {
    const id = String(row.task_id);
    const where = `task ${id}`;
    if (tasks.has(id)) problems.push(`${where}: duplicate row`);
    tasks.set(id, row);
    if (!STATUSES.has(String(row.status))) problems.push(`${where}: unknown status ${String(row.status)}`);
    if (row.generation !== 'v1' && row.generation !== 'v2') problems.push(`${where}: unknown generation ${String(row.generation)}`);
    if (!isStoredJson(row.arguments)) problems.push(`${where}: arguments are not stored JSON`);
    if (!isStoredJson(row.client_capabilities)) problems.push(`${where}: client capabilities are not JSON`);
    if (row.progress_token !== null && !isStoredJson(row.progress_token)) problems.push(`${where}: progress token is not JSON`);
    if (num(row.created_at) > num(row.last_updated_at)) problems.push(`${where}: lastUpdatedAt before createdAt`);
    const ttl = row.ttl_ms === null ? null : num(row.ttl_ms);
    const expiresAt = row.expires_at === null ? null : num(row.expires_at);
    if ((ttl === null) !== (expiresAt === null) || (ttl !== null && expiresAt !== num(row.created_at) + ttl))
      problems.push(`${where}: expiresAt ${expiresAt} does not match createdAt + ttlMs`);
    if (!(num(row.attempt) >= 0)) problems.push(`${where}: negative attempt`);
    const seq = num(row.seq);
    if (seqs.has(seq)) problems.push(`${where}: seq ${seq} used twice`);
    seqs.add(seq);
  }

  const outcomes = new Map<string, StoreRow>();
  for (const row of snapshot.task_outcomes) {
    const id = String(row.task_id);
    if (!tasks.has(id)) problems.push(`outcome of ${id}: orphan (no such task)`);
    if (row.kind !== 'result' && row.kind !== 'error') problems.push(`outcome of ${id}: unknown kind ${String(row.kind)}`);
    if (!isStoredJson(row.body)) problems.push(`outcome of ${id}: body is not JSON`);
    outcomes.set(id, row);
  }
  for (const [id, row] of tasks) {
    const status = String(row.status) as TaskStatus;
    const kind = outcomes.get(id)?.kind;
    const fits = status === 'completed' ? kind === 'result' : status === 'failed' ? kind === 'result' || kind === 'error' : kind === undefined;
    if (!fits) problems.push(`task ${id}: status ${status} with ${kind === undefined ? 'no outcome' : `a ${String(kind)} outcome`}`);
  }

  const pending = new Map<string, number>();
  for (const row of snapshot.input_requests) {
    const id = String(row.task_id);
    const where = `input request ${id}/${String(row.key)}`;
    if (!tasks.has(id)) problems.push(`${where}: orphan (no such task)`);
    const state = String(row.state);
    if (!INPUT_STATES.has(state)) problems.push(`${where}: unknown state ${state}`);
    if (!isStoredJson(row.request)) problems.push(`${where}: request is not stored JSON`);
    if (state === 'pending' && (row.response !== null || row.answered_at !== null)) problems.push(`${where}: pending but answered`);
    if (state === 'answered' && !isStoredJson(row.response)) problems.push(`${where}: answered without a stored answer`);
    if (state === 'pending') pending.set(id, (pending.get(id) ?? 0) + 1);
  }
  for (const [id, row] of tasks) {
    if (row.status === 'input_required' && !pending.has(id)) problems.push(`task ${id}: input_required with no pending input request`);
    if (row.status === 'working' && pending.has(id)) problems.push(`task ${id}: working with ${pending.get(id)} pending input requests`);
  }

  for (const row of snapshot.task_steps) {
    const id = String(row.task_id);
    if (!tasks.has(id)) problems.push(`step ${id}/${String(row.name)}: orphan (no such task)`);
    if (!isStoredJson(row.value)) problems.push(`step ${id}/${String(row.name)}: value is not stored JSON`);
  }

  const eventSeqs = new Set<number>();
  const expired = new Set<string>();
  const created = new Set<string>();
  const newest = new Map<string, { seq: number; status: string }>();
  for (const row of snapshot.task_events) {
    const id = String(row.task_id);
    const seq = num(row.seq);
    if (eventSeqs.has(seq)) problems.push(`event ${seq}: seq used twice`);
    eventSeqs.add(seq);
    if (!EVENT_KINDS.has(String(row.kind))) problems.push(`event ${seq}: unknown kind ${String(row.kind)}`);
    if (!STATUSES.has(String(row.status))) problems.push(`event ${seq}: unknown status ${String(row.status)}`);
    if (row.payload !== null && !isStoredJson(row.payload)) problems.push(`event ${seq}: payload is not JSON`);
    if (row.kind === 'expired') expired.add(id);
    if (row.kind === 'created') created.add(id);
    if ((newest.get(id)?.seq ?? -Infinity) < seq) newest.set(id, { seq, status: String(row.status) });
  }
  for (const id of newest.keys()) if (!tasks.has(id) && !expired.has(id)) problems.push(`events of ${id}: orphan (no such task and no expired event)`);
  for (const [id, row] of tasks) {
    if (!created.has(id)) problems.push(`task ${id}: no created event`);
    const last = newest.get(id);
    if (last && last.status !== row.status) problems.push(`task ${id}: status ${String(row.status)} but its newest event says ${last.status}`);
    if (expired.has(id)) problems.push(`task ${id}: still stored after its expired event`);
  }
  return problems;
}

/** A snapshot of a SQLite store through a better-sqlite3 connection (one read transaction). */
export function sqliteSnapshot(db: { prepare(sql: string): { all(): unknown[] }; transaction<T>(fn: () => T): () => T }): SnapshotSource {
  return async () =>
    db.transaction(() => Object.fromEntries(STORE_TABLES.map((table) => [table, db.prepare(`SELECT * FROM ${table}`).all() as StoreRow[]])) as StoreSnapshot)();
}

/** A snapshot of a PostgreSQL store (schema `mcp_tasks`) through one `pg` client, in a REPEATABLE READ transaction. */
export function postgresSnapshot(client: { query(sql: string): Promise<{ rows: unknown[] }> }, schema = 'mcp_tasks'): SnapshotSource {
  return async () => {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    try {
      const snapshot: Partial<StoreSnapshot> = {};
      for (const table of STORE_TABLES) snapshot[table] = (await client.query(`SELECT * FROM ${schema}.${table}`)).rows as StoreRow[];
      return snapshot as StoreSnapshot;
    } finally {
      await client.query('COMMIT');
    }
  };
}
