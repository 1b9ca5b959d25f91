/**
 * The built-in tools as a tool module (see `ToolSource`): what `serve` and `worker` load unless `--no-builtins`.
 * `cleanup_logs` and `publish_report` exist only with a writable root; `sourceOptions.checkTargets` (`--check-target`)
 * are the hosts check_infrastructure may reach.
 */
import type { AnyToolDefinition } from '../core/tool.js';
import type { ToolModuleOptions } from '../core/tool-source.js';
import { cleanupLogsOperations, cleanupLogsTool } from './cleanup-logs/tool.js';
import { builtinTools } from './index.js';
import { publishReportOperations, publishReportTool } from './publish-report/tool.js';

/**
 * The reconcilers of the built-in tools' effects (issue 12), by tool name: what `mcp-tasks ops reconcile` runs. The
 * same objects are the tools' own `operations`.
 */
export function operations(options: ToolModuleOptions): Record<string, ReturnType<typeof publishReportOperations>> {
  return options.writableRoots.length > 0 ? { publish_report: publishReportOperations(options.writableRoots), cleanup_logs: cleanupLogsOperations } : {};
}

export default function builtinToolModule(options: ToolModuleOptions): AnyToolDefinition[] {
  const checkTargets = options.sourceOptions?.checkTargets;
  if (checkTargets !== undefined && !(Array.isArray(checkTargets) && checkTargets.every((target) => typeof target === 'string'))) {
    throw new RangeError('built-in tools: checkTargets must be an array of host patterns');
  }
  const tools = builtinTools({ roots: [...options.roots], checkTargets: (checkTargets ?? []) as string[] });
  if (options.writableRoots.length > 0)
    tools.push(cleanupLogsTool({ writableRoots: options.writableRoots }), publishReportTool({ writableRoots: options.writableRoots }));
  return tools;
}
