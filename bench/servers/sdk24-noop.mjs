// Baseline: the base SDK alone. `@modelcontextprotocol/server` 2.4 `createMcpHandler` (a server instance per
// request, as the SDK does it) behind the SDK's own Node adapter, with one tool `noop` registered on `McpServer`.
// The driver calls `tools/call noop` on the 2026-07-28 path: what our server pays before any task logic.
// Usage: node bench/servers/sdk24-noop.mjs <port>
import { createServer } from 'node:http';

import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';

const port = Number(process.argv[2]);
const handler = createMcpHandler(() => {
  const server = new McpServer({ name: 'sdk24-noop', version: '0' });
  server.registerTool('noop', { description: 'Completes at once.', inputSchema: z.object({}) }, async () => ({ content: [{ type: 'text', text: 'ok' }] }));
  return server;
});
const node = toNodeHandler(handler);
createServer((request, response) => void node(request, response)).listen(port, '127.0.0.1');
