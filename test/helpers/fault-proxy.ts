/**
 * Fault-injection fixtures for the requestor: the shipped {@link FaultProxy} (src/verify) started per test, tools
 * that count their side effects on the server side, and an idempotency-honouring front — a stand-in, for tests
 * only, for the server half of idempotency keys (which the server does not implement yet): it declares
 * `dev.mcp-tasks/idempotency` and answers a repeated key with the first answer.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { z } from 'zod';

import { type AnyToolDefinition, defineTool, textResult } from '../../src/core/tool.js';
import { FaultProxy } from '../../src/verify/fault-proxy.js';

export { FaultProxy };

/** Resolve after `ms`, or reject when `signal` aborts first. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
}

const CONFIRM = { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] };

/**
 * `effect_job {label, seconds}` performs one side effect (a counter per label, kept in the server process) and
 * then works for `seconds`; `confirm_effect {label}` asks for confirmation first. Both are task-optional.
 */
export function effectTools(): { tools: AnyToolDefinition[]; effects(label: string): number } {
  const counts = new Map<string, number>();
  const effect = (label: string): number => {
    const next = (counts.get(label) ?? 0) + 1;
    counts.set(label, next);
    return next;
  };
  const tools = [
    defineTool({
      name: 'effect_job',
      description: 'One side effect, then work for `seconds`.',
      execution: 'task-optional',
      inputSchema: z.object({ label: z.string(), seconds: z.number().min(0).max(600) }),
      async run({ label, seconds }, ctx) {
        const count = effect(label);
        ctx.setStatus(`effect ${label} done, working ${seconds}s`);
        await sleep(seconds * 1000, ctx.signal);
        return textResult(`effect ${label} #${count}`);
      },
    }),
    defineTool({
      name: 'confirm_effect',
      description: 'Asks, then performs one side effect.',
      execution: 'task-optional',
      elicits: true,
      journaled: true, // re-run after the answer: the effect is a journaled step, performed once
      inputSchema: z.object({ label: z.string() }),
      async run({ label }, ctx) {
        const answer = await ctx.elicit({ message: `Apply ${label}?`, requestedSchema: CONFIRM });
        if (answer.action !== 'accept' || answer.content?.confirm !== true) return textResult(`skipped ${label}`);
        const count = await ctx.step('effect', () => effect(label));
        return textResult(`effect ${label} #${count}`);
      },
    }),
  ];
  return { tools: tools as AnyToolDefinition[], effects: (label) => counts.get(label) ?? 0 };
}

const IDEMPOTENCY_CAPABILITY = 'dev.mcp-tasks/idempotency';
const IDEMPOTENCY_KEY = 'dev.mcp-tasks/idempotency-key';

/** Add the idempotency capability to an `initialize` / `server/discover` result (`strip`: remove it). */
function declare(message: Record<string, unknown>, strip = false): Record<string, unknown> {
  const result = message.result as { capabilities?: Record<string, Record<string, unknown>> } | undefined;
  if (!result?.capabilities) return message;
  const capabilities = result.capabilities;
  if (strip) {
    for (const where of ['extensions', 'experimental']) {
      if (capabilities[where]) delete capabilities[where][IDEMPOTENCY_CAPABILITY];
      if (capabilities[where] && Object.keys(capabilities[where]).length === 0) delete capabilities[where];
    }
    return message;
  }
  const where = capabilities.extensions ? 'extensions' : 'experimental';
  capabilities[where] = { ...capabilities[where], [IDEMPOTENCY_CAPABILITY]: {} };
  return message;
}

/** The whole body of a request. */
export function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk)).on('end', () => resolve(Buffer.concat(chunks)));
  });
}

/**
 * An HTTP front that honours idempotency keys on `tools/call` in front of `targetUrl` — or, with `strip`, one that
 * hides the server's own declaration (a server that does not honour keys, for the client's side of that case).
 */
export async function startIdempotentFront(
  targetUrl: string,
  options: { strip?: boolean } = {},
): Promise<{ url: string; keys: string[]; replays: number; close(): Promise<void> }> {
  const answers = new Map<string, { status: number; type: string; text: string }>();
  const state = { keys: [] as string[], replays: 0 };
  const server: Server = createServer((request, response) => {
    void (async () => {
      const body = await readBody(request);
      let message: { method?: string; id?: unknown; params?: { _meta?: Record<string, unknown> } } | undefined;
      try {
        message = JSON.parse(body.toString('utf8')) as typeof message;
      } catch {
        message = undefined;
      }
      const key = message?.method === 'tools/call' && !options.strip ? message.params?._meta?.[IDEMPOTENCY_KEY] : undefined;
      if (typeof key === 'string') {
        state.keys.push(key);
        const seen = answers.get(key);
        if (seen) {
          state.replays += 1;
          response.writeHead(seen.status, { 'content-type': seen.type });
          response.end(seen.text.replaceAll(/"id":\s*("[^"]*"|\d+)/g, `"id":${JSON.stringify(message?.id)}`));
          return;
        }
      }
      const headers = new Headers();
      for (const [name, value] of Object.entries(request.headers))
        if (typeof value === 'string' && name !== 'host' && name !== 'content-length') headers.set(name, value);
      const upstream = await fetch(new URL(request.url ?? '/', targetUrl), {
        method: request.method ?? 'GET',
        headers,
        ...(request.method === 'POST' ? { body } : {}),
      });
      const type = upstream.headers.get('content-type') ?? '';
      const passthrough = Object.fromEntries(
        [...upstream.headers].filter(([name]) => !['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(name)),
      );
      const rewrite = message?.method === 'initialize' || message?.method === 'server/discover';
      if (!rewrite && typeof key !== 'string') {
        response.writeHead(upstream.status, passthrough);
        if (!upstream.body) return void response.end();
        for await (const chunk of upstream.body) response.write(chunk);
        return void response.end();
      }
      let text = await upstream.text();
      if (rewrite) {
        text = type.includes('text/event-stream')
          ? text.replaceAll(
              /^data: (.*)$/gm,
              (_line, json: string) => `data: ${JSON.stringify(declare(JSON.parse(json) as Record<string, unknown>, options.strip))}`,
            )
          : JSON.stringify(declare(JSON.parse(text) as Record<string, unknown>, options.strip));
      }
      if (typeof key === 'string') answers.set(key, { status: upstream.status, type, text });
      response.writeHead(upstream.status, passthrough);
      response.end(text);
    })().catch(() => response.socket?.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${new URL(targetUrl).pathname}`,
    get keys() {
      return state.keys;
    },
    get replays() {
      return state.replays;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
