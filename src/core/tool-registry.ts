import { invalidParams } from './errors.js';
import { MAX_TIMER_MS } from './limits.js';
import type { AnyToolDefinition } from './tool.js';

/**
 * The tools of one process by name, checked once for the service and the worker alike: names are unique, and a
 * tool that asks for input (`elicits: true`) is safe to re-run (`idempotent` or `journaled`), because it is run
 * again from the start after every answer.
 */
export class ToolRegistry {
  private readonly byName: ReadonlyMap<string, AnyToolDefinition>;

  /** @throws TasksError `-32602` naming a duplicate tool name or an elicting tool that is not safe to re-run. */
  constructor(tools: readonly AnyToolDefinition[]) {
    const byName = new Map<string, AnyToolDefinition>();
    for (const tool of tools) {
      if (byName.has(tool.name)) throw invalidParams(`duplicate tool name: ${tool.name}`);
      for (const [field, value] of [
        ['runtimeLimitMs', tool.runtimeLimitMs],
        ['defaultTtlMs', tool.defaultTtlMs],
      ] as const) {
        const most = field === 'runtimeLimitMs' ? MAX_TIMER_MS : Number.MAX_SAFE_INTEGER;
        if (value !== undefined && (!Number.isInteger(value) || value <= 0 || value > most))
          throw invalidParams(`tool ${tool.name}: ${field} must be a positive integer of milliseconds, at most ${most} (got ${String(value)})`);
      }
      if (tool.elicits === true && !tool.idempotent && !tool.journaled) {
        throw invalidParams(`tool ${tool.name} asks for input (elicits: true) but is neither idempotent nor journaled: it is re-run after every answer`);
      }
      byName.set(tool.name, tool);
    }
    this.byName = byName;
  }

  /** The tool called `name`, if registered. */
  get(name: string): AnyToolDefinition | undefined {
    return this.byName.get(name);
  }

  /** Every tool, in registration order. */
  list(): AnyToolDefinition[] {
    return [...this.byName.values()];
  }
}
