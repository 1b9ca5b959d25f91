// The child-process alternative the ADR weighs (docs/adr/0002-tool-isolation.md), for bench/isolation.mjs only: a
// forked Node process that loads the tools with the same loader and runs each request it gets over IPC with the
// in-process executor, answering with the outcome. Not used by mcp-tasks itself.
import { ToolRegistry } from '../dist/core/tool-registry.js';
import { loadToolSources } from '../dist/core/tool-source.js';
import { InProcessExecutor } from '../dist/execution/in-process-executor.js';
import { NULL_HOST } from './lib/null-host.mjs';

const sources = JSON.parse(process.argv[2] ?? '[]');
const executor = new InProcessExecutor(new ToolRegistry(await loadToolSources(sources, { roots: [], writableRoots: [], deniedPaths: [] })));
process.on('message', async ({ id, request }) => {
  const outcome = await executor.execute(request, NULL_HOST, new AbortController().signal);
  process.send({ id, outcome });
});
process.send({ ready: true, rss: process.memoryUsage().rss });
