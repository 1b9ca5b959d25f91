import type { ServerSecretStore, SessionStore } from '../session-store.js';

/**
 * Shared server state kept next to the tasks (port "sessions", issue 11 item 5): the v1 sessions, so any instance
 * serves any session, and the one server secret the instances agree on. Errors: only `StoreError`.
 */
export interface SessionTables {
  /** The v1 sessions kept next to the tasks, so any instance serves any session (issue 11 item 5). */
  readonly sessions: SessionStore;

  /** The record by which the instances of this store agree on one server secret. */
  readonly serverSecret: ServerSecretStore;
}
