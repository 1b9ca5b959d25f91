import { taskNotFound, TasksError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { ScopePolicy } from '../core/scopes.js';
import type { TaskRecord } from '../core/task.js';
import { ErrorCode } from '../protocol/constants.js';
import { Scope } from '../protocol/scopes.js';
import { lackingScopes } from './access.js';
import type { TaskOperation, TaskOperationContext, TaskServiceHook } from './hooks.js';

/** The fixed scope each operation needs (issue 10 §1); `callTool` needs the tool's scopes instead, `listTools` none. */
const OPERATION_SCOPES: Readonly<Record<TaskOperation, readonly string[]>> = Object.freeze({
  listTools: [],
  callTool: [],
  get: [Scope.TasksRead],
  list: [Scope.TasksRead],
  waitForTerminal: [Scope.TasksRead],
  subscribe: [Scope.TasksRead],
  cancel: [Scope.TasksCancel],
  answerInput: [Scope.TasksAnswer],
  // The dashboard's reads: the viewer rule (`sees` in service/access.ts) decides on the session's current scopes — own tasks,
  // every owner's with admin:read; its actions go through cancel / answerInput and are re-checked there.
  readResource: [Scope.TasksRead],
  browse: [],
  inspect: [],
  watchVisible: [],
  overview: [],
  operations: [],
  // A write, but the viewer rule decides it (viewerMayReconcile: tasks:cancel for one's own, admin:write for anyone's).
  reconcile: [],
});

/**
 * Operations on a task that carry its tool's authority on: answering its questions (the run continues), reading
 * it, its result or its notifications. `cancel` is not among them — stopping work never needs the authority to do it.
 */
const CARRIES_TOOL_AUTHORITY: ReadonlySet<TaskOperation> = new Set(['get', 'waitForTerminal', 'subscribe', 'answerInput', 'readResource']);

/**
 * Scope re-checks in the service door (issue 10 §1), for every entry path alike: each operation is judged against
 * the scopes of the credential of *this* request (the actor's `scopes`), never those the task was created with.
 * - around every operation: the fixed scope of the operation (`tasks:read` for get/list/result/subscribe,
 *   `tasks:cancel`, `tasks:answer`) and, for `tools/call`, the tool's scopes (`--tool-scope`);
 * - on the task itself ({@link TaskServiceHook.admitTask}): the scopes of the task's tool once more when the task
 *   continues or is read (answer, get, result, subscribe), so a token that lost `logs:read` cannot push or read an
 *   `analyze_logs` task it started with it.
 * A refused task operation gets the unknown-task answer (`-32602`, like a foreign task: nothing is learnt about the
 * task); a refused `tools/call` or `tasks/list` gets `-32602` naming the missing scopes. The HTTP front refuses most
 * of these earlier, at the method level, with HTTP 403 `insufficient_scope`; this is the layer that also holds for
 * stdio embedders, the fast path, v1 elicitation replies and task-level tool scopes the front cannot see.
 * The anonymous caller (`scopes: 'all'`: stdio, HTTP without `--auth`) passes every check.
 */
export class ScopeCheck implements TaskServiceHook {
  constructor(
    private readonly policy: ScopePolicy,
    private readonly logger: Logger,
  ) {}

  async around<T>(context: TaskOperationContext, next: () => Promise<T>): Promise<T> {
    const required =
      context.operation === 'callTool' && context.tool !== undefined ? this.policy.toolScopes(context.tool) : OPERATION_SCOPES[context.operation];
    const missing = lackingScopes(context.actor.scopes, required);
    if (missing.length > 0) throw this.refuse(context, missing, context.taskId === undefined ? undefined : context.taskId);
    return next();
  }

  admitTask(context: TaskOperationContext, record: TaskRecord): void {
    if (!CARRIES_TOOL_AUTHORITY.has(context.operation)) return;
    const missing = lackingScopes(context.actor.scopes, this.policy.toolScopes(record.toolName));
    if (missing.length > 0) throw this.refuse(context, missing, record.taskId);
  }

  private refuse(context: TaskOperationContext, missing: readonly string[], taskId: string | undefined): TasksError {
    this.logger.info(
      { operation: context.operation, owner: context.actor.ownerKey, missing, ...(taskId === undefined ? {} : { taskId }) },
      'task operation refused: insufficient scope',
    );
    if (taskId !== undefined) return taskNotFound();
    return new TasksError(
      ErrorCode.InvalidParams,
      `Insufficient scope: ${context.operation === 'callTool' ? `tool ${context.tool}` : context.operation} needs ${missing.join(' ')}`,
      { reason: 'insufficient_scope', requiredScopes: [...missing] },
    );
  }
}
