import type { TaskAdmission } from './ports/admission.js';
import type { TaskFeed } from './ports/feed.js';
import type { TaskInputs } from './ports/inputs.js';
import type { TaskLeases } from './ports/leases.js';
import type { LedgerStore } from './ports/ledger.js';
import type { StoreMaintenance } from './ports/maintenance.js';
import type { ProcessRegistry } from './ports/processes.js';
import type { TaskResults } from './ports/results.js';
import type { KillSwitchStore } from './ports/rollout.js';
import type { TaskRows } from './ports/rows.js';
import type { SessionTables } from './ports/sessions.js';
import type { TaskSteps } from './ports/steps.js';

export type { CreateAdmission, CreateQuota, QuotaRefusal, TaskAdmission } from './ports/admission.js';
export type { CommitWatcher, TaskEvent, TaskEventKind, TaskEventListener, TaskFeed } from './ports/feed.js';
export type { AnswerInputChange, AnswerInputResult, NewInputRequest, RequestInputChange, TaskInputs } from './ports/inputs.js';
export type { TaskLeases } from './ports/leases.js';
export type { AuditStore, LedgerStore } from './ports/ledger.js';
export type { StoreMaintenance } from './ports/maintenance.js';
export type { ProcessRegistry } from './ports/processes.js';
export { RESULT_CHUNK_BYTES, type TaskResults } from './ports/results.js';
export type { KillSwitchStore } from './ports/rollout.js';
export type { TaskBrowseQuery, TaskRows, TaskScope, TransitionRequest } from './ports/rows.js';
export type { SessionTables } from './ports/sessions.js';
export { type JournalEntry, MAX_TOOL_STATE_BYTES, MAX_TOOL_STATE_KEYS, MAX_TOOL_STATE_NAME, type TaskSteps } from './ports/steps.js';

/**
 * The storage port: the composition of the ports by role in `core/ports/` (one file each: rows, admission, leases,
 * inputs, results, steps, processes, feed, ledger, rollout, maintenance, sessions). One implementation per backend
 * (`SqliteTaskStore`, `PostgresTaskStore`, each composed of one file per port under `store/<backend>/`); every
 * backend passes the same contract suite (`describeTaskStoreContract` in `mcp-tasks/testing`, one file per port
 * under `testing/store-contract/`). A consumer that needs one role takes that port only (the sweeper takes
 * {@link StoreMaintenance}, the process registration {@link ProcessRegistry}, the event feed {@link TaskFeed}).
 *
 * Durability: every returned promise resolves only after its write is committed durably. Implementations may
 * share one commit between concurrent writes (group commit) but never resolve before that commit.
 *
 * Time: instants the caller passes (`now`, `createdAt`) are stored as given. Leases and expiry sweeps are judged
 * on the store's own clock instead (SQLite: the clock it was opened with; PostgreSQL: the database's
 * `clock_timestamp()`), so the caller passes lease *durations*: one clock decides whether a lease has lapsed, for
 * every process sharing the database.
 *
 * Errors: methods throw only a `StoreError` (codes `conflict`, `invalid`, `unavailable`, `schema_mismatch`,
 * `fault`; the server maps them to JSON-RPC errors in one place, `protocol/constants.ts`); a condition that does
 * not hold is reported by the return value (`undefined` / `false` / `[]`), never by an exception.
 */
export interface TaskStore
  extends
    TaskRows,
    TaskAdmission,
    TaskLeases,
    TaskInputs,
    TaskResults,
    TaskSteps,
    ProcessRegistry,
    TaskFeed,
    LedgerStore,
    KillSwitchStore,
    StoreMaintenance,
    SessionTables {}
