import { isTerminal } from '../core/state-machine.js';
import type { TaskRecord } from '../core/task.js';
import { Scope } from '../protocol/scopes.js';
import type { Caller } from './caller.js';

/**
 * A person looking at tasks through the dashboard (issue 16): an identity and its scopes, generation-agnostic (a
 * viewer sees the tasks of both generations that its identity owns). The dashboard server builds it from a verified
 * session on every request; nothing of it is taken from the browser.
 */
export interface Viewer {
  /** `issuer|subject|tenant` of the verified credential, or `anonymous` when authentication is off. */
  ownerKey: string;
  /** OAuth scopes of the credential (see `protocol/scopes.ts`). */
  scopes: readonly string[];
}

/** What a viewer may do with one task it can see. */
export interface ViewerPermissions {
  cancel: boolean;
  answer: boolean;
}

/**
 * The visibility rule, in one place: a viewer sees its own tasks, and every owner's with `admin:read`; a task it
 * does not see answers exactly like an unknown id.
 */
export function viewerSees(viewer: Viewer, record: Pick<TaskRecord, 'ownerKey'>): boolean {
  return record.ownerKey === viewer.ownerKey || viewer.scopes.includes(Scope.AdminRead);
}

/**
 * The action rule: cancelling needs `tasks:cancel` — for a viewer's own tasks and, with `admin:read`, for another
 * owner's. Answering needs `tasks:answer`, and for another owner's task also `admin:write`: an answer speaks for
 * the owner (an approval), which is more than stopping its work. An `admin:read` viewer without them is read-only.
 * Actions on a terminal task are never offered.
 */
export function viewerPermissions(viewer: Viewer, record: Pick<TaskRecord, 'ownerKey' | 'status'>): ViewerPermissions {
  if (!viewerSees(viewer, record)) return { cancel: false, answer: false };
  const live = !isTerminal(record.status);
  const own = record.ownerKey === viewer.ownerKey;
  return {
    cancel: live && viewer.scopes.includes(Scope.TasksCancel),
    answer: record.status === 'input_required' && viewer.scopes.includes(Scope.TasksAnswer) && (own || viewer.scopes.includes(Scope.AdminWrite)),
  };
}

/**
 * The reconcile rule (asking the system of record and recording its answer is a write): a viewer's own operation
 * needs `tasks:cancel` or `admin:write`; another owner's needs `admin:write` (and `admin:read` to see it at all).
 * `admin:read` alone never acts.
 */
export function viewerMayReconcile(viewer: Viewer, record: Pick<TaskRecord, 'ownerKey'>): boolean {
  if (!viewerSees(viewer, record)) return false;
  if (viewer.scopes.includes(Scope.AdminWrite)) return true;
  return record.ownerKey === viewer.ownerKey && viewer.scopes.includes(Scope.TasksCancel);
}

/**
 * The viewer as a {@link Caller} for the service's hooks (no protocol generation: a viewer is not an MCP request),
 * with the scopes of its session's credential, re-read on every request.
 */
export function viewerCaller(viewer: Viewer): Caller {
  return { ownerKey: viewer.ownerKey, scopes: viewer.scopes, negotiation: 'per-request', generation: null, protocolVersion: '', clientCapabilities: {} };
}

/**
 * The kill-switch rule, as the admin API's: `admin:read` (or `admin:write`, which includes reading) sees the switch;
 * only `admin:write` changes it. A viewer who may not see it is never told it exists (the dashboard answers 404).
 */
export function viewerKillSwitch(viewer: Viewer): { see: boolean; change: boolean } {
  const change = viewer.scopes.includes(Scope.AdminWrite);
  return { see: change || viewer.scopes.includes(Scope.AdminRead), change };
}
