/**
 * The built-in tools of the server. Tools here import only from `core/` and `protocol/`: the runtime hands
 * them a `ToolContext` and they never reach into the server, the runtime or the store.
 */
import type { AnyToolDefinition } from '../core/tool.js';
import { analyzeLogsTool } from './analyze-logs/tool.js';
import { auditRepositoryTool } from './audit-repository/tool.js';
import { checkInfrastructureTool } from './check-infrastructure/tool.js';

export { type CleanupLogsOptions, cleanupLogsTool } from './cleanup-logs/tool.js';
export { type DemoCorpusOptions, type DemoCorpusSummary, writeDemoCorpus } from './demo-corpus.js';
export { isInsideRoots, resolveInsideRoots } from './roots.js';

/** Options of {@link builtinTools}. */
export interface BuiltinToolsOptions {
  /**
   * Directories the tools may read (absolute). The runtime passes them to every call as `roots` of the tool
   * context and of preflight checks; they are accepted here so that a caller states them where it builds the
   * tool list.
   */
  roots: string[];
  /**
   * Host patterns check_infrastructure may reach (`serve --check-target`, see `check-infrastructure/targets.ts`);
   * none by default: it then checks files only.
   */
  checkTargets?: readonly string[];
}

/**
 * The built-in tool definitions: `analyze_logs`, `audit_repository` and `check_infrastructure`.
 *
 * @throws RangeError when a root is not an absolute path or a check target pattern does not parse.
 */
export function builtinTools(options: BuiltinToolsOptions): AnyToolDefinition[] {
  const relative = options.roots.find((root) => !root.startsWith('/') && !/^[A-Za-z]:[\\/]/.test(root));
  if (relative !== undefined) throw new RangeError(`tool roots must be absolute paths: ${relative}`);
  return [analyzeLogsTool, auditRepositoryTool, checkInfrastructureTool(options.checkTargets ?? [])];
}
