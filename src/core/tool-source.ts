import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import { invalidParams } from './errors.js';
import type { JsonObject } from './task.js';
import type { AnyToolDefinition } from './tool.js';

/**
 * Where a process loads tools from: a module and the export that holds them. Plain JSON, so every process (API,
 * worker) — and the isolated executor of a later stage, in its threads — loads the same tools from the same
 * settings instead of receiving functions it cannot be sent.
 */
export interface ToolSource {
  /** A `file:` URL, or a package specifier (resolved from this package's location). */
  module: string;
  /**
   * The export that holds the tools: an array of tool definitions, or a function `(options) => tools` (sync or
   * async). @defaultValue `default`, else `tools`
   */
  export?: string;
  /** Options of this source alone, handed to its factory as `sourceOptions` (e.g. the built-ins' `checkTargets`). */
  options?: JsonObject;
}

/** What a tool module's factory is given: the same confinement settings every process resolves. */
export interface ToolModuleOptions {
  /** Directories tools may read (absolute, symlinks resolved). */
  roots: readonly string[];
  /** Directories tools may delete in (absolute); empty unless `--writable-root` was given. */
  writableRoots: readonly string[];
  /** The server's own state, never to be read or deleted whatever the roots (each call's context carries it too). */
  deniedPaths: readonly string[];
  /** The loading source's own {@link ToolSource.options} (`{}` when it has none). */
  sourceOptions?: JsonObject;
}

/**
 * The source of a module given on the command line (`--tools`): a path (relative to `cwd`) becomes a `file:` URL,
 * anything else stays a package specifier.
 */
export function toolSourceOf(specifier: string, cwd: string = process.cwd()): ToolSource {
  const isPath = specifier.startsWith('.') || isAbsolute(specifier);
  return { module: isPath ? pathToFileURL(resolve(cwd, specifier)).href : specifier };
}

/**
 * Import every source and collect its tools, in order.
 * @throws TasksError `-32602` naming the module when it exports nothing usable; the import's own error when the
 *   module cannot be loaded.
 */
export async function loadToolSources(sources: readonly ToolSource[], options: ToolModuleOptions): Promise<AnyToolDefinition[]> {
  const tools: AnyToolDefinition[] = [];
  for (const source of sources) {
    const module = (await import(source.module)) as Record<string, unknown>;
    const exported = source.export === undefined ? (module.default ?? module.tools) : module[source.export];
    const factoryOptions: ToolModuleOptions = { ...options, sourceOptions: source.options ?? {} };
    const loaded = typeof exported === 'function' ? await (exported as (o: ToolModuleOptions) => unknown)(factoryOptions) : exported;
    if (!Array.isArray(loaded) || !loaded.every((tool) => typeof tool?.name === 'string' && typeof tool?.run === 'function')) {
      throw invalidParams(
        `${source.module}${source.export ? ` (export ${source.export})` : ''}: expected an array of tools (defineTool) or a function returning one`,
      );
    }
    tools.push(...(loaded as AnyToolDefinition[]));
  }
  return tools;
}
