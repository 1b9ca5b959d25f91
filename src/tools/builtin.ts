/**
 * The built-in tools as a tool module (see `ToolSource`): what `serve` and `worker` load unless `--no-builtins`.
 * `cleanup_logs` exists only with a writable root.
 */
import type { AnyToolDefinition } from '../core/tool.js';
import type { ToolModuleOptions } from '../core/tool-source.js';
import { cleanupLogsTool } from './cleanup-logs/tool.js';
import { builtinTools } from './index.js';

export default function builtinToolModule(options: ToolModuleOptions): AnyToolDefinition[] {
  const tools = builtinTools({ roots: [...options.roots] });
  if (options.writableRoots.length > 0) tools.push(cleanupLogsTool({ writableRoots: options.writableRoots }));
  return tools;
}
