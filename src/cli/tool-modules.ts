import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AnyToolDefinition } from '../core/tool.js';

/** What a tool module is given when its default export is a function. */
export interface ToolModuleOptions {
  roots: readonly string[];
  writableRoots: readonly string[];
  /** The server's own state, never to be read or deleted whatever the roots (each call's context carries it too). */
  deniedPaths: readonly string[];
}

/**
 * Load tools from a module the way the built-in ones are loaded: its default export (or `tools` export) is an
 * array of tool definitions, or a function `(options) => tools` (sync or async).
 * @throws Error naming the module when it exports nothing usable.
 */
export async function loadToolModule(specifier: string, options: ToolModuleOptions): Promise<AnyToolDefinition[]> {
  const url = specifier.startsWith('.') || specifier.startsWith('/') ? pathToFileURL(resolve(specifier)).href : specifier;
  const module = (await import(url)) as { default?: unknown; tools?: unknown };
  const exported = module.default ?? module.tools;
  const tools = typeof exported === 'function' ? await (exported as (o: ToolModuleOptions) => unknown)(options) : exported;
  if (!Array.isArray(tools) || !tools.every((tool) => typeof tool?.name === 'string' && typeof tool?.run === 'function')) {
    throw new Error(`${specifier}: expected a default export that is an array of tools (defineTool) or a function returning one`);
  }
  return tools as AnyToolDefinition[];
}
