/**
 * The tool author's entry, `mcp-tasks/tool`: what a tool module needs to define tools and nothing else. Each thread
 * of the isolated executor loads the tool modules, so a tool module that imports `mcp-tasks` (the server API: the
 * MCP SDK, its schemas, the auth kit) makes every thread load all of it — about 0.3 s of CPU per thread — while
 * this entry loads a few small modules (test/architecture/layering.test.ts keeps it that way). Everything here is
 * also exported by `mcp-tasks`, which re-exports this file whole.
 */
export type { PathConfinement } from './core/confinement.js';
export { TasksError } from './core/errors.js';
export {
  type AnyToolDefinition,
  type ContentBlock,
  defineTool,
  localPath,
  type PreflightContext,
  textResult,
  type ToolContext,
  type ToolDefinition,
  type ToolExecution,
  ToolInputError,
  type ToolResult,
} from './core/tool.js';
export { confine, type Confinement, resolveInsideRoots } from './tools/roots.js';
