/**
 * The OAuth scopes of mcp-tasks — the one definition for every issue (issue 10 §1). Tool scopes (e.g. `logs:read`)
 * are configured per tool by the operator (`--tool-scope analyze_logs=logs:read`); these are fixed.
 */
export const Scope = Object.freeze({
  /** Read tasks: `tasks/get`, `tasks/list`, `tasks/result`, `subscriptions/listen` for tasks. */
  TasksRead: 'tasks:read',
  /** Cancel tasks: `tasks/cancel`. */
  TasksCancel: 'tasks:cancel',
  /** Answer a task's questions: v2 `tasks/update`, v1 elicitation replies. */
  TasksAnswer: 'tasks:answer',
  /** Read operational state (dashboard, admin reads; reserved for the operations issue). */
  AdminRead: 'admin:read',
  /** Change operational state (kill switch, canary; reserved for the operations issue). */
  AdminWrite: 'admin:write',
} as const);

/** One of the fixed scopes. */
export type FixedScope = (typeof Scope)[keyof typeof Scope];

/** The scopes a requestor needs for the task methods (what a token-file entry without `scopes` gets, with the tool scopes). */
export const TASK_SCOPES: readonly FixedScope[] = Object.freeze([Scope.TasksRead, Scope.TasksCancel, Scope.TasksAnswer]);

/** The operator scopes; never granted by default. */
export const ADMIN_SCOPES: readonly FixedScope[] = Object.freeze([Scope.AdminRead, Scope.AdminWrite]);

/** RFC 6749 §3.3 `scope-token = 1*( %x21 / %x23-5B / %x5D-7E )`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/** Whether `value` is a valid OAuth scope token (printable ASCII without space, `"` and `\`). */
export function isScopeToken(value: string): boolean {
  return SCOPE_TOKEN.test(value);
}
