/**
 * Shared fixtures for the requestor tests (library and CLI): tools that count their runs on the server side, a
 * `fetch` that records the JSON-RPC methods a client sends, and a TCP proxy that can swallow answers to simulate a
 * connection lost after the server received a request.
 */
import type { AddressInfo } from 'node:net';
import { connect, createServer as createTcpServer, type Socket } from 'node:net';

import { z } from 'zod';

import { type AnyToolDefinition, defineTool, localPath, textResult } from '../../src/core/tool.js';
import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';

/** The conformance fixtures plus `echo_args`, each wrapped so `runs` counts executions per tool name. */
export function countingTools(): { tools: AnyToolDefinition[]; runs: Map<string, number>; total(): number } {
  const runs = new Map<string, number>();
  const echo = defineTool({
    name: 'echo_args',
    description: 'Returns its arguments as JSON text.',
    execution: 'task-optional',
    idempotent: true,
    inputSchema: z.looseObject({ path: localPath(z.string().optional()), root: z.string().optional() }), // only path is declared local
    async run(args) {
      return textResult(JSON.stringify(args));
    },
  });
  const tools = [...conformanceFixtureTools(), echo].map((tool): AnyToolDefinition => ({
    ...tool,
    run: (args: unknown, context: Parameters<AnyToolDefinition['run']>[1]) => {
      runs.set(tool.name, (runs.get(tool.name) ?? 0) + 1);
      return tool.run(args, context);
    },
  }));
  return { tools, runs, total: () => [...runs.values()].reduce((sum, count) => sum + count, 0) };
}

/** A `fetch` that records, for every POST, the JSON-RPC method(s) in its body, the messages and when they were sent. */
export class RequestLog {
  readonly sent: Array<{ method: string; at: number; headers: Headers }> = [];
  /** Every JSON-RPC message posted (requests, notifications and the client's responses), in order. */
  readonly messages: Array<Record<string, unknown>> = [];

  readonly fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    if (typeof init?.body === 'string') {
      try {
        const parsed = JSON.parse(init.body) as unknown;
        for (const message of (Array.isArray(parsed) ? parsed : [parsed]) as Array<{ method?: unknown }>) {
          this.messages.push(message as Record<string, unknown>);
          if (typeof message.method === 'string') this.sent.push({ method: message.method, at: Date.now(), headers: new Headers(init.headers) });
        }
      } catch {
        // Not JSON-RPC: nothing to record.
      }
    }
    return fetch(input, init);
  };

  /** How many requests of `method` were sent. */
  count(method: string): number {
    return this.sent.filter((entry) => entry.method === method).length;
  }

  /** The `params` of every posted request of `method`, in order. */
  params(method: string): Array<Record<string, unknown>> {
    return this.messages.filter((message) => message.method === method).map((message) => (message.params ?? {}) as Record<string, unknown>);
  }
}

/** A promise with its resolve function, for tools that wait until a test lets them go on. */
export class Gate {
  private release: () => void = () => {};
  private current = new Promise<void>((resolve) => (this.release = resolve));

  /** Resolves once opened. */
  get opened(): Promise<void> {
    return this.current;
  }

  open(): void {
    this.release();
  }

  /** Close again for the next test. */
  reset(): void {
    this.current = new Promise<void>((resolve) => (this.release = resolve));
  }
}

/**
 * A loopback TCP proxy in front of an MCP server. While `dropping` is true it still forwards requests to the server
 * but destroys the client connection as soon as the server starts answering: the request arrives, the answer is
 * lost. `retarget` points it at another server (a restarted one) without changing the URL clients use.
 */
export async function startDroppingProxy(targetUrl: string): Promise<{ url: string; dropping: boolean; retarget(url: string): void; close(): Promise<void> }> {
  let target = new URL(targetUrl);
  const sockets = new Set<Socket>();
  const state = { dropping: false };
  const server = createTcpServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    client.pipe(upstream);
    upstream.on('data', (chunk) => {
      if (state.dropping) {
        client.destroy();
        upstream.destroy();
      } else {
        client.write(chunk);
      }
    });
    const closeBoth = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', closeBoth).on('close', closeBoth);
    upstream.on('error', closeBoth).on('close', closeBoth);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${target.pathname}`,
    get dropping() {
      return state.dropping;
    },
    set dropping(value: boolean) {
      state.dropping = value;
    },
    retarget(url: string) {
      target = new URL(url);
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
