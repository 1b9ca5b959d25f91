import { taskNotFound } from '../core/errors.js';
import { missingScopes } from '../core/scopes.js';
import { isTerminal } from '../core/state-machine.js';
import type { TaskGeneration, TaskRecord } from '../core/task.js';
import { Scope } from '../protocol/scopes.js';

/**
 * Access checks on an actor, shared by the three audiences of the service (the tasks/* door, tools/call and the
 * viewer): who owns a task, who sees it, what an actor's scopes let it do. Each rule is written once, here; a
 * refusal that would tell a task exists is always the unknown-task answer (2025-11-25 R45/R49, SEP-2663 E39/E45).
 */

/**
 * What an actor's credential grants: its OAuth scopes, or `'all'` for the anonymous caller of stdio and of an HTTP
 * server without `--auth` (no credential exists to take a scope from; the operator runs it on loopback only).
 */
export type ScopeGrant = readonly string[] | 'all';

/**
 * Who acts, as the credential of the current request says (re-read on every request, never cached): an MCP
 * requestor (its `Caller` adds what it negotiated) or a dashboard / admin API viewer (`Viewer`).
 */
export interface Actor {
  /** Task owner: `issuer|subject|tenant` from the verified credential, or `anonymous` (2025-11-25 R48, SEP-2663 E45). */
  ownerKey: string;
  /** The scopes of this request's credential (issue 10 §1): every task operation re-checks them. */
  scopes: ScopeGrant;
}

/**
 * An actor on the tasks of one generation: what the tasks/* operations take. An MCP `TaskCaller` is one;
 * a viewer acting on a task it sees acts as the task's owner in the task's generation, with its own scopes.
 */
export interface TaskActor extends Actor {
  generation: TaskGeneration;
}

/** The scopes of `required` that `granted` lacks (none for `'all'`). */
export function lackingScopes(granted: ScopeGrant, required: readonly string[]): string[] {
  return granted === 'all' ? [] : missingScopes(granted, required);
}

/** Whether the actor holds `scope` (the anonymous actor holds every scope). */
export function holdsScope(actor: Actor, scope: string): boolean {
  return actor.scopes === 'all' || actor.scopes.includes(scope);
}

/** The ownership rule of every tasks/* operation: same owner and same generation (R45, E39). */
export function ownsTask(actor: TaskActor, record: Pick<TaskRecord, 'ownerKey' | 'generation'>): boolean {
  return record.ownerKey === actor.ownerKey && record.generation === actor.generation;
}

/**
 * {@link ownsTask} as a guard for a record read elsewhere.
 * @throws TasksError `-32602` "Task not found" when the actor does not own `record` (no existence leak).
 */
export function assertOwns(actor: TaskActor, record: Pick<TaskRecord, 'ownerKey' | 'generation'>): void {
  if (!ownsTask(actor, record)) throw taskNotFound();
}

/** Whether the actor sees every owner's tasks (`admin:read`), not only its own. */
export function seesEveryOwner(actor: Actor): boolean {
  return holdsScope(actor, Scope.AdminRead);
}

/**
 * The visibility rule of the viewer (issue 16), in one place: an actor sees its own tasks of both generations,
 * and every owner's with `admin:read`; a task it does not see answers exactly like an unknown id.
 */
export function sees(actor: Actor, record: Pick<TaskRecord, 'ownerKey'>): boolean {
  return record.ownerKey === actor.ownerKey || seesEveryOwner(actor);
}

/** What an actor may do with one task it sees. */
export interface TaskPermissions {
  cancel: boolean;
  answer: boolean;
}

/**
 * The action rule: cancelling needs `tasks:cancel` — for one's own tasks and, with `admin:read`, for another
 * owner's. Answering needs `tasks:answer`, and for another owner's task also `admin:write`: an answer speaks for
 * the owner (an approval), which is more than stopping its work. An `admin:read` actor without them is
 * read-only. Actions on a terminal task are never offered.
 */
export function taskPermissions(actor: Actor, record: Pick<TaskRecord, 'ownerKey' | 'status'>): TaskPermissions {
  if (!sees(actor, record)) return { cancel: false, answer: false };
  const live = !isTerminal(record.status);
  const own = record.ownerKey === actor.ownerKey;
  return {
    cancel: live && holdsScope(actor, Scope.TasksCancel),
    answer: record.status === 'input_required' && holdsScope(actor, Scope.TasksAnswer) && (own || holdsScope(actor, Scope.AdminWrite)),
  };
}

/**
 * The reconcile rule (asking the system of record and recording its answer is a write): one's own operation needs
 * `tasks:cancel` or `admin:write`; another owner's needs `admin:write` (and `admin:read` to see it at all).
 * `admin:read` alone never acts.
 */
export function mayReconcile(actor: Actor, record: Pick<TaskRecord, 'ownerKey'>): boolean {
  if (!sees(actor, record)) return false;
  if (holdsScope(actor, Scope.AdminWrite)) return true;
  return record.ownerKey === actor.ownerKey && holdsScope(actor, Scope.TasksCancel);
}

/**
 * The kill-switch rule, as the admin API's: `admin:read` (or `admin:write`, which includes reading) sees the switch;
 * only `admin:write` changes it. An actor who may not see it is never told it exists (the dashboard answers 404).
 */
export function killSwitchAccess(actor: Actor): { see: boolean; change: boolean } {
  const change = holdsScope(actor, Scope.AdminWrite);
  return { see: change || holdsScope(actor, Scope.AdminRead), change };
}
