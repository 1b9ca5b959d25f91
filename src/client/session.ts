import {
  Client,
  type ClientCapabilities,
  type ElicitResult,
  type FetchLike,
  type JSONRPCMessage,
  SdkHttpError,
  StreamableHTTPClientTransport,
  type VersionNegotiationMode,
} from '@modelcontextprotocol/client';
import type { z } from 'zod';

import { TASKS_EXTENSION_ID, V1_PROTOCOL_VERSION, V2_PROTOCOL_VERSION } from '../protocol/constants.js';
import { toClientError } from './error-mapping.js';
import { TasksConnectionError, TasksProtocolError } from './errors.js';
import { ELICITATION_CAPABILITY } from './input.js';
import { deadlineFetch } from './request-deadline.js';
import type { ProtocolChoice } from './types.js';
import type { V1InputRouter } from './v1-input-router.js';

/** How to reach and authenticate to one MCP endpoint. */
export interface SessionOptions {
  url: URL;
  protocol: ProtocolChoice;
  token?: string;
  headers?: Record<string, string>;
  clientInfo: { name: string; version: string };
  fetch?: FetchLike;
  /** Per-request timeout in ms. */
  requestTimeoutMs: number;
  /**
   * Declares form elicitation (in `initialize`, and in every 2026-07-28 request's `_meta`) and answers the
   * server's 2025-11-25 `elicitation/create` requests through this router.
   */
  input?: V1InputRouter;
}

/** What a request may do besides sending itself. */
export interface SessionRequestOptions {
  signal?: AbortSignal;
  /** Overrides the session's per-request timeout (ms). */
  timeoutMs?: number;
  /**
   * Re-initialise and send again when a v1-generation (2025-11-25) session was lost (HTTP 404 on a session request, e.g. after a
   * server restart). Only for requests that are safe to repeat; the 404 means the first one was never processed.
   */
  resendOnLostSession?: boolean;
}

/** A tool as `tools/list` describes it; `execution.taskSupport` exists on 2025-11-25 only. */
export interface ListedTool {
  name: string;
  execution?: { taskSupport?: string };
  /** The tool's JSON Schema; only its top-level `properties` are read here. */
  inputSchema?: { properties?: Record<string, unknown> };
}

// The extension is declared on every connection: the SDK then puts it into the `_meta` envelope of every modern
// request (E1). On a 2025 `initialize` the key is inert — the extension is undefined there (SEP-2663 §3).
const CAPABILITIES = { extensions: { [TASKS_EXTENSION_ID]: {} } } as ClientCapabilities;

/** The capabilities a session declares: the Tasks Extension, plus form elicitation when it can answer. */
export function sessionCapabilities(answersInput: boolean): ClientCapabilities {
  return (answersInput ? { ...CAPABILITIES, elicitation: ELICITATION_CAPABILITY } : CAPABILITIES) as ClientCapabilities;
}

/**
 * The SDK transport, keeping track of the JSON-RPC responses it is posting (answers to the server's requests),
 * so that closing can wait until they have been delivered.
 */
class TrackingTransport extends StreamableHTTPClientTransport {
  private readonly posting = new Set<Promise<unknown>>();

  override send(message: JSONRPCMessage | JSONRPCMessage[], options?: Parameters<StreamableHTTPClientTransport['send']>[1]): Promise<void> {
    const sent = super.send(message, options);
    if (!Array.isArray(message) && !('method' in message)) {
      const settled = sent.catch(() => {});
      this.posting.add(settled);
      void settled.then(() => this.posting.delete(settled));
    }
    return sent;
  }

  /** Resolves once every response posted so far was delivered (or failed). */
  async flush(): Promise<void> {
    await Promise.all([...this.posting]);
  }
}

function negotiationMode(protocol: ProtocolChoice): VersionNegotiationMode {
  if (protocol === 'auto') return 'auto';
  return protocol === V2_PROTOCOL_VERSION ? { pin: V2_PROTOCOL_VERSION } : 'legacy';
}

/**
 * One connection of the official `@modelcontextprotocol/client` to an endpoint: negotiation, transport, auth
 * headers, and the typed error mapping. A v1-generation (2025-11-25) session lost to a server restart is re-initialised on demand.
 */
export class McpSession {
  private reconnecting: Promise<void> | undefined;
  /** When the current session was initialised or discovered (epoch ms). */
  private connectedAt = Date.now();
  /** Incremented on every new session (re-initialisation, re-discovery), so derived state knows it is stale. */
  private sessionCount = 0;

  private constructor(
    private readonly options: SessionOptions,
    private client: Client,
    private transport: TrackingTransport,
  ) {}

  /** Changes whenever the session was replaced (a lost 2025 session re-initialised, a 2026 `server/discover` repeated). */
  get epoch(): number {
    return this.sessionCount;
  }

  /** When the current session was initialised (2025-11-25) or discovered (2026-07-28), epoch ms. */
  get establishedAt(): number {
    return this.connectedAt;
  }

  /** The v1-generation (2025-11-25) `Mcp-Session-Id`, when the server minted one. */
  get sessionId(): string | undefined {
    return this.transport.sessionId;
  }

  /** `serverInfo` from `initialize` or `server/discover`. */
  get serverInfo(): { name: string; version: string } | undefined {
    const info = this.client.getServerVersion();
    return info ? { name: info.name, version: info.version } : undefined;
  }

  /**
   * Discover again (2026-07-28 only; a 2025 session keeps its session, whose capabilities cannot change): a fresh
   * `server/discover` replaces the capabilities and serverInfo.
   * @throws TasksConnectionError / TasksProtocolError as {@link open}.
   */
  async rediscover(): Promise<void> {
    if (this.generation !== 'v2') return;
    const { client, transport } = await McpSession.connect(this.options, { pin: V2_PROTOCOL_VERSION });
    await this.client.close().catch(() => {});
    this.client = client;
    this.transport = transport;
    this.connectedAt = Date.now();
    this.sessionCount += 1;
  }

  /**
   * Connect and negotiate.
   * @throws TasksConnectionError when the endpoint cannot be reached or refuses the credentials.
   * @throws TasksProtocolError when a pinned 2025-11-25 connection negotiated another version.
   */
  static async open(options: SessionOptions): Promise<McpSession> {
    const { client, transport } = await McpSession.connect(options, negotiationMode(options.protocol));
    return new McpSession(options, client, transport);
  }

  private static async connect(options: SessionOptions, mode: VersionNegotiationMode): Promise<{ client: Client; transport: TrackingTransport }> {
    const client = new Client(options.clientInfo, { capabilities: sessionCapabilities(options.input !== undefined), versionNegotiation: { mode } });
    // Background noise (the 2025 GET stream reconnecting, …) is not actionable; request failures surface anyway.
    client.onerror = () => {};
    const router = options.input;
    if (router) {
      client.setRequestHandler(
        'elicitation/create',
        async (request, context) =>
          (await router.handle(request as { params: Record<string, unknown> }, context.mcpReq.id, context.mcpReq.signal)) as ElicitResult,
      );
    }
    const transport = new TrackingTransport(options.url, {
      ...(options.headers ? { requestInit: { headers: options.headers } } : {}),
      ...(options.token !== undefined ? { authProvider: { token: async () => options.token } } : {}),
      // Every request of this session honours the deadline of the wait it belongs to (see request-deadline.ts).
      fetch: deadlineFetch(options.fetch ?? fetch),
    });
    try {
      await client.connect(transport, { timeout: options.requestTimeoutMs });
    } catch (error) {
      await client.close().catch(() => {});
      throw toClientError(error, 'connect', options.url.href);
    }
    const version = client.getNegotiatedProtocolVersion();
    if (options.protocol === V1_PROTOCOL_VERSION && version !== V1_PROTOCOL_VERSION) {
      await client.close().catch(() => {});
      throw new TasksProtocolError(`${options.url.href} negotiated MCP ${version ?? 'unknown'}, not ${V1_PROTOCOL_VERSION}`);
    }
    return { client, transport };
  }

  /** `v2` (2026-07-28, stateless) or `v1` (2025-11-25, an `initialize` session); from the SDK's protocol era. */
  get generation(): 'v1' | 'v2' {
    return this.client.getProtocolEra() === 'modern' ? 'v2' : 'v1';
  }

  /** The negotiated protocol version, e.g. `2026-07-28` or `2025-11-25`. */
  get protocolVersion(): string {
    return this.client.getNegotiatedProtocolVersion() ?? '';
  }

  /** The server's capabilities (from `server/discover` or `initialize`). */
  get serverCapabilities(): Record<string, unknown> {
    return (this.client.getServerCapabilities() ?? {}) as Record<string, unknown>;
  }

  /**
   * Send one request through the SDK client and validate the result with `schema` (the SDK removes a 2026-07-28
   * top-level `resultType` before the schema sees the result).
   * @throws TasksProtocolError for JSON-RPC errors (with `code`) and invalid replies; TasksConnectionError otherwise.
   */
  async request<S extends z.ZodType>(method: string, params: Record<string, unknown>, schema: S, options: SessionRequestOptions = {}): Promise<z.output<S>> {
    const send = () =>
      this.client.request({ method, params }, schema, {
        timeout: options.timeoutMs ?? this.options.requestTimeoutMs,
        ...(options.signal ? { signal: options.signal } : {}),
      }) as Promise<z.output<S>>;
    try {
      // Inside the try: the SDK throws some refusals synchronously (e.g. a method its protocol generation does not allow).
      return await send();
    } catch (error) {
      if (!(options.resendOnLostSession && this.generation === 'v1' && error instanceof SdkHttpError && error.status === 404)) {
        throw toClientError(error, method, this.options.url.href);
      }
    }
    // 2025-03-26+ transport rule: a 404 for a session request means the session is gone; start a new one.
    await this.reinitialize();
    try {
      return await send();
    } catch (error) {
      throw toClientError(error, method, this.options.url.href);
    }
  }

  /** All tools (every page). */
  async listTools(): Promise<ListedTool[]> {
    try {
      return (await this.client.listTools(undefined, { timeout: this.options.requestTimeoutMs })).tools as ListedTool[];
    } catch (error) {
      throw toClientError(error, 'tools/list', this.options.url.href);
    }
  }

  /** Whether this session declared form elicitation (it was opened with an input router). */
  get answersInput(): boolean {
    return this.options.input !== undefined;
  }

  /** Wait until every answer posted to the server so far has been delivered (or failed). */
  flush(): Promise<void> {
    return this.transport.flush();
  }

  /** Close the connection (and the 2025 session's GET stream) once posted answers are delivered. */
  async close(): Promise<void> {
    await this.flush();
    await this.client.close().catch(() => {});
  }

  private reinitialize(): Promise<void> {
    this.reconnecting ??= (async () => {
      const previous = this.protocolVersion;
      const { client, transport } = await McpSession.connect(this.options, 'legacy');
      if (client.getNegotiatedProtocolVersion() !== previous) {
        await client.close().catch(() => {});
        throw new TasksConnectionError(
          `${this.options.url.href} now negotiates MCP ${client.getNegotiatedProtocolVersion() ?? 'unknown'} instead of ${previous}`,
          false,
        );
      }
      await this.client.close().catch(() => {});
      this.client = client;
      this.transport = transport;
      this.connectedAt = Date.now();
      this.sessionCount += 1;
    })().finally(() => {
      this.reconnecting = undefined;
    });
    return this.reconnecting;
  }
}
