/**
 * The built-in tools as a tool module (see `ToolSource`): what `serve` and `worker` load unless `--no-builtins`.
 * `cleanup_logs` exists only with a writable root; `sourceOptions.checkTargets` (`--check-target`) are the hosts
 * check_infrastructure may reach.
 */
import type { AnyToolDefinition } from '../core/tool.js';
import type { ToolModuleOptions } from '../core/tool-source.js';
import { cleanupLogsTool } from './cleanup-logs/tool.js';
import { builtinTools } from './index.js';

export default function builtinToolModule(options: ToolModuleOptions): AnyToolDefinition[] {
  const checkTargets = options.sourceOptions?.checkTargets;
  if (checkTargets !== undefined && !(Array.isArray(checkTargets) && checkTargets.every((target) => typeof target === 'string'))) {
    throw new RangeError('built-in tools: checkTargets must be an array of host patterns');
  }
  const tools = builtinTools({ roots: [...options.roots], checkTargets: (checkTargets ?? []) as string[] });
  if (options.writableRoots.length > 0) tools.push(cleanupLogsTool({ writableRoots: options.writableRoots }));
  return tools;
}
