import { ErrorCode } from '../protocol/constants.js';
import { ADMIN_SCOPES, isScopeToken, Scope, TASK_SCOPES } from '../protocol/scopes.js';
import { TasksError } from './errors.js';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Which scopes what needs: the fixed task scopes (`protocol/scopes.ts`) and the operator's per-tool scopes.
 *
 * Two kinds of checks use it:
 * - **method level** ({@link requiredForMessage}), made by the HTTP front before anything is looked up: a request
 *   whose method needs a scope the token lacks is refused with HTTP 403 `insufficient_scope`;
 * - **task level** (the service door, next stage): when a task *continues* (answer, result, cancel) the caller's
 *   current scopes are checked again against {@link toolScopes} of the task's tool, so a task never continues on
 *   stale authority.
 *
 * Immutable; one instance per server.
 */
export class ScopePolicy {
  private readonly byTool: ReadonlyMap<string, readonly string[]>;

  /** @param toolScopes - scopes each tool needs at `tools/call` (all of them), by tool name. */
  constructor(toolScopes: ReadonlyMap<string, readonly string[]> = new Map()) {
    for (const [tool, scopes] of toolScopes) {
      for (const scope of scopes)
        if (!isScopeToken(scope)) throw new TasksError(ErrorCode.InvalidParams, `tool scope of ${tool}: "${scope}" is not an OAuth scope token`);
    }
    this.byTool = new Map([...toolScopes].map(([tool, scopes]) => [tool, Object.freeze([...new Set(scopes)])]));
  }

  /**
   * Parse `--tool-scope` values, `tool=scope` each (repeat a tool for several scopes; `tool=a b` works too).
   * @throws TasksError `-32602` naming every malformed entry.
   */
  static fromToolScopeSpecs(specs: readonly string[]): ScopePolicy {
    const byTool = new Map<string, string[]>();
    const problems: string[] = [];
    for (const spec of specs) {
      const match = /^([^=\s]+)=(.+)$/.exec(spec.trim());
      const scopes = match?.[2]?.split(/\s+/).filter((scope) => scope.length > 0) ?? [];
      if (!match || scopes.length === 0 || !scopes.every(isScopeToken)) {
        problems.push(`"${spec}" (expected tool=scope, e.g. analyze_logs=logs:read)`);
        continue;
      }
      const tool = match[1] as string;
      byTool.set(tool, [...(byTool.get(tool) ?? []), ...scopes]);
    }
    if (problems.length > 0) throw new TasksError(ErrorCode.InvalidParams, `invalid --tool-scope ${problems.join(', ')}`);
    return new ScopePolicy(byTool);
  }

  /** Scopes `tools/call` of `toolName` needs (empty: none beyond authentication). */
  toolScopes(toolName: string): readonly string[] {
    return this.byTool.get(toolName) ?? [];
  }

  /** Tool names that have scopes, for start-up checks (a misspelt name would leave the real tool unprotected). */
  scopedTools(): string[] {
    return [...this.byTool.keys()];
  }

  /** Every scope the server understands (`scopes_supported` of the protected-resource metadata). */
  supported(): string[] {
    return [...new Set([...TASK_SCOPES, ...[...this.byTool.values()].flat(), ...ADMIN_SCOPES])];
  }

  /** What a credential without an explicit scope list may do: every task scope and every tool scope, never admin. */
  requestorScopes(): string[] {
    return [...new Set([...TASK_SCOPES, ...[...this.byTool.values()].flat()])];
  }

  /**
   * Scopes one JSON-RPC message needs at the method level, judged from the message alone (no task lookup):
   * `tools/call` → the tool's scopes; `tasks/get|list|result` and a task `subscriptions/listen` → `tasks:read`;
   * `tasks/cancel` → `tasks:cancel`; `tasks/update` and a posted response (a v1 elicitation reply) →
   * `tasks:answer`; anything else (and anything malformed, which the protocol layer answers) → none.
   */
  requiredForMessage(message: unknown): readonly string[] {
    if (!isObject(message)) return [];
    if (typeof message.method !== 'string') return 'result' in message || 'error' in message ? [Scope.TasksAnswer] : [];
    const params = isObject(message.params) ? message.params : {};
    switch (message.method) {
      case 'tools/call':
        return typeof params.name === 'string' ? this.toolScopes(params.name) : [];
      case 'tasks/get':
      case 'tasks/list':
      case 'tasks/result':
        return [Scope.TasksRead];
      case 'tasks/cancel':
        return [Scope.TasksCancel];
      case 'tasks/update':
        return [Scope.TasksAnswer];
      case 'subscriptions/listen':
        return isObject(params.notifications) && 'taskIds' in params.notifications ? [Scope.TasksRead] : [];
      default:
        return [];
    }
  }
}

/** The scopes of `required` that `granted` lacks (empty: allowed). */
export function missingScopes(granted: readonly string[], required: readonly string[]): string[] {
  const have = new Set(granted);
  return required.filter((scope) => !have.has(scope));
}
