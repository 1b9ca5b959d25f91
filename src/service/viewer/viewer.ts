import type { OperationRecord } from '../../core/ledger.js';
import type { TaskBrowseQuery, TaskEvent } from '../../core/store.js';
import type { TaskRecord } from '../../core/task.js';
import type { TaskPermissions } from '../access.js';
import type { TaskDetails } from '../tasks/tasks-door.js';

/**
 * A person looking at tasks through the dashboard or the admin API (issue 16): the viewer's own actor — an
 * identity and its scopes, generation-agnostic (a viewer sees the tasks of both generations that its identity owns,
 * and every owner's with `admin:read`; see `sees` in `service/access.ts`). Not an MCP caller: it negotiated no
 * protocol. The dashboard server builds it from a verified session on every request; nothing of it is taken from
 * the browser.
 */
export interface Viewer {
  /** `issuer|subject|tenant` of the verified credential, or `anonymous` when authentication is off. */
  ownerKey: string;
  /** OAuth scopes of the credential (see `protocol/scopes.ts`). */
  scopes: readonly string[];
}

/** What a viewer may do with one task it can see (see `taskPermissions`). */
export type ViewerPermissions = TaskPermissions;

/** What a viewer's task list asks for: the store's filters without the owner (the service sets it). */
export type ViewerQuery = Omit<TaskBrowseQuery, 'ownerKey'>;

/** One page of a viewer's list, newest first. */
export interface ViewerPage {
  tasks: TaskRecord[];
  /** `beforeSeq` of the next (older) page, or `undefined` when this was the last one. */
  nextBeforeSeq: number | undefined;
}

/** The most events a task page's timeline shows (a long run of progress messages is cut at the end). */
export const MAX_TIMELINE_EVENTS = 500;

/** Everything a task page shows, read for one viewer. */
export interface TaskInspection {
  task: TaskRecord;
  /** The task's committed events, oldest first (at most {@link MAX_TIMELINE_EVENTS}). */
  events: TaskEvent[];
  details: TaskDetails;
  /** The task's domain operations (ledger rows), oldest first, beside its status. */
  operations: OperationRecord[];
  /** The task's tool declares domain operations (reconcilers): rows may still come, e.g. after a confirmation. */
  declaresOperations: boolean;
  permissions: ViewerPermissions;
}
