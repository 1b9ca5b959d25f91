// Baseline: the reference users know. `@modelcontextprotocol/sdk` 1.32.2 experimental tasks as its own example
// server wires them (`simpleStreamableHttp`): one `McpServer` per session sharing an `InMemoryTaskStore`, a tool
// registered with `registerToolTask` (task-optional) that completes at once, sessionful streamable HTTP with SSE
// answers (the transport's default). Plain node:http instead of Express, so the framework's cost is not counted.
// Tools: `noop` (the P1 / P2 suites) and `p7_echo` (bench:instances). Usage: node bench/servers/reference-sdk132.mjs <port>
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

import { InMemoryTaskMessageQueue, InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

const port = Number(process.argv[2]);
const taskStore = new InMemoryTaskStore();
const sessions = new Map();

function sessionServer() {
  const server = new McpServer(
    { name: 'reference-sdk132', version: '0' },
    { capabilities: { tasks: { requests: { tools: { call: {} } } } }, taskStore, taskMessageQueue: new InMemoryTaskMessageQueue() },
  );
  server.experimental.tasks.registerToolTask(
    'noop',
    { description: 'Completes at once.', execution: { taskSupport: 'optional' } },
    {
      async createTask({ taskStore: store, taskRequestedTtl }) {
        const task = await store.createTask({ ttl: taskRequestedTtl });
        // The work runs out of band, as in the SDK's example; a no-op finishes right away.
        void store.storeTaskResult(task.taskId, 'completed', { content: [{ type: 'text', text: 'ok' }] });
        return { task };
      },
      getTask: (_args, { taskId, taskStore: store }) => store.getTask(taskId),
      getTaskResult: (_args, { taskId, taskStore: store }) => store.getTaskResult(taskId),
    },
  );
  // bench:instances' round trip (bench/several-instances.mjs): answers the time its task was created (its pick-up).
  server.experimental.tasks.registerToolTask(
    'p7_echo',
    { description: 'Answers when it started.', execution: { taskSupport: 'optional' } },
    {
      async createTask({ taskStore: store, taskRequestedTtl }) {
        const startedAt = Date.now();
        const task = await store.createTask({ ttl: taskRequestedTtl });
        void store.storeTaskResult(task.taskId, 'completed', { content: [{ type: 'text', text: String(startedAt) }] });
        return { task };
      },
      getTask: (_args, { taskId, taskStore: store }) => store.getTask(taskId),
      getTaskResult: (_args, { taskId, taskStore: store }) => store.getTaskResult(taskId),
    },
  );
  return server;
}

function reply(response, status, message) {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message } }));
}

async function handle(request, response) {
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
  const sessionId = request.headers['mcp-session-id'];
  const existing = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
  if (existing) return existing.handleRequest(request, response, body);
  if (sessionId !== undefined) return reply(response, 404, 'Session not found');
  if (request.method !== 'POST' || !isInitializeRequest(body)) return reply(response, 400, 'Bad Request: No valid session ID provided');
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => sessions.set(id, transport),
  });
  transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
  await sessionServer().connect(transport);
  return transport.handleRequest(request, response, body);
}

createServer((request, response) => {
  handle(request, response).catch(() => !response.headersSent && reply(response, 500, 'Internal error'));
}).listen(port, '127.0.0.1');
