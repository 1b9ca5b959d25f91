import type { JsonObject, NewTask } from './task.js';

/**
 * A 2025-11-25 (v1) session as every instance must know it (issue 11 item 5): what `initialize` negotiated, so a
 * POST, GET or DELETE of the session can land on any instance behind a plain round-robin load balancer. Progress
 * tokens live on the task rows (`TaskRecord.progressToken`), which every instance reads.
 */
export interface SessionRecord {
  /** The `Mcp-Session-Id` the server minted (a UUID). */
  sessionId: string;
  /** The principal that initialised the session; another owner presenting the id is answered as unknown. */
  ownerKey: string;
  /** The negotiated protocol version (`2025-11-25`). */
  protocolVersion: string;
  /** The `initialize` params the client sent (`protocolVersion`, `capabilities`, `clientInfo`), replayed to rebuild the session. */
  initialize: JsonObject;
  /** Epoch ms, writer's clock. */
  createdAt: number;
  /** Epoch ms of the last request some instance recorded (throttled; see {@link SessionStore.touchSession}). */
  lastSeenAt: number;
}

/**
 * Durable v1 sessions, kept next to the tasks (SQLite table `sessions`, PostgreSQL `mcp_tasks.sessions`). Single
 * statements, no batching: sessions are created once and read per request. Errors: `StoreError` as for tasks.
 */
export interface SessionStore {
  /** Record a new session (an id that exists is replaced: ids are random UUIDs, so only a retry repeats one). */
  putSession(record: SessionRecord): Promise<void>;
  /** The session, or `undefined` when it never existed, was deleted or pruned. */
  getSession(sessionId: string): Promise<SessionRecord | undefined>;
  /** Which of `sessionIds` have a record (one statement for all: an instance checks the copies it holds). */
  existingSessions(sessionIds: readonly string[]): Promise<Set<string>>;
  /** Move `lastSeenAt` forward to `at` (never back). */
  touchSession(sessionId: string, at: number): Promise<void>;
  /** Delete the session (HTTP DELETE, idle end); `true` when it existed. */
  deleteSession(sessionId: string): Promise<boolean>;
  /** Delete sessions last seen before `before` (epoch ms), at most `limit`; returns how many went. */
  deleteIdleSessions(before: number, limit: number): Promise<number>;
  /**
   * Ids of the session's tasks that are not terminal (`working`, `input_required`), oldest first, at most `limit`:
   * the tasks whose `created` event carries `{sessionId}` ({@link NewTask.sessionId}). A task leaves the list when
   * it settles and is gone when the sweep deletes it (its events go with it). Session records are not consulted.
   */
  openSessionTasks(sessionId: string, limit: number): Promise<string[]>;
}

/** The `created` event's payload of `task`: `{sessionId}` for a task a v1 session created, `null` otherwise. */
export function createdEventPayload(task: Pick<NewTask, 'sessionId'>): JsonObject | null {
  return typeof task.sessionId === 'string' && task.sessionId.length > 0 ? { sessionId: task.sessionId } : null;
}

/**
 * How the instances of one store agree on the server secret (issue 11 item 5): `verifier` — every instance brings
 * the secret (`MCP_TASKS_SECRET`, or SQLite's `<dataDir>/secret`) and the store keeps only a salted scrypt digest
 * of it; `kept` — the store keeps the secret itself (PostgreSQL without `MCP_TASKS_SECRET`).
 */
export type ServerSecretRecord = { mode: 'verifier'; salt: string; verifier: string; createdAt: number } | { mode: 'kept'; secret: string; createdAt: number };

/** The store's one server-secret record. */
export interface ServerSecretStore {
  /**
   * Record `candidate` unless a record exists (the first instance wins, also in a race); returns the record that
   * holds. A function is called only when no record exists yet (a verifier costs a slow hash: an instance that finds
   * one needs only the hash with the stored salt).
   */
  claimServerSecret(candidate: ServerSecretRecord | (() => ServerSecretRecord)): Promise<ServerSecretRecord>;
}
