import { Client, SdkHttpError, StreamableHTTPClientTransport, type ClientCapabilities, type FetchLike, type VersionNegotiationMode } from '@modelcontextprotocol/client';
import type { z } from 'zod';
import { TASKS_EXTENSION_ID, V1_PROTOCOL_VERSION, V2_PROTOCOL_VERSION } from '../protocol/constants.js';
import { toClientError } from './error-mapping.js';
import { TasksConnectionError, TasksProtocolError } from './errors.js';
import type { ProtocolChoice } from './types.js';

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
}

/** What a request may do besides sending itself. */
export interface SessionRequestOptions {
  signal?: AbortSignal;
  /** Overrides the session's per-request timeout (ms). */
  timeoutMs?: number;
  /**
   * Re-initialise and send again when a 2025-era session was lost (HTTP 404 on a session request, e.g. after a
   * server restart). Only for requests that are safe to repeat; the 404 means the first one was never processed.
   */
  resendOnLostSession?: boolean;
}

/** A tool as `tools/list` describes it; `execution.taskSupport` exists on 2025-11-25 only. */
export interface ListedTool {
  name: string;
  execution?: { taskSupport?: string };
}

// The extension is declared on every connection: the SDK then puts it into the `_meta` envelope of every modern
// request (E1). On a 2025 `initialize` the key is inert — the extension is undefined there (SEP-2663 §3).
const CAPABILITIES = { extensions: { [TASKS_EXTENSION_ID]: {} } } as ClientCapabilities;

function negotiationMode(protocol: ProtocolChoice): VersionNegotiationMode {
  if (protocol === 'auto') return 'auto';
  return protocol === V2_PROTOCOL_VERSION ? { pin: V2_PROTOCOL_VERSION } : 'legacy';
}

/**
 * One connection of the official `@modelcontextprotocol/client` to an endpoint: negotiation, transport, auth
 * headers, and the typed error mapping. A 2025-era session lost to a server restart is re-initialised on demand.
 */
export class McpSession {
  private reconnecting: Promise<void> | undefined;

  private constructor(
    private readonly options: SessionOptions,
    private client: Client,
  ) {}

  /**
   * Connect and negotiate.
   * @throws TasksConnectionError when the endpoint cannot be reached or refuses the credentials.
   * @throws TasksProtocolError when a pinned 2025-11-25 connection negotiated another version.
   */
  static async open(options: SessionOptions): Promise<McpSession> {
    const client = await McpSession.connect(options, negotiationMode(options.protocol));
    return new McpSession(options, client);
  }

  private static async connect(options: SessionOptions, mode: VersionNegotiationMode): Promise<Client> {
    const client = new Client(options.clientInfo, { capabilities: CAPABILITIES, versionNegotiation: { mode } });
    // Background noise (the 2025 GET stream reconnecting, …) is not actionable; request failures surface anyway.
    client.onerror = () => {};
    const transport = new StreamableHTTPClientTransport(options.url, {
      ...(options.headers ? { requestInit: { headers: options.headers } } : {}),
      ...(options.token !== undefined ? { authProvider: { token: async () => options.token } } : {}),
      ...(options.fetch ? { fetch: options.fetch } : {}),
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
    return client;
  }

  /** `modern` (2026-07-28, stateless) or `legacy` (an `initialize` session). */
  get era(): 'legacy' | 'modern' {
    return this.client.getProtocolEra() ?? 'legacy';
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
      // Inside the try: the SDK throws some refusals synchronously (e.g. a method its era does not allow).
      return await send();
    } catch (error) {
      if (!(options.resendOnLostSession && this.era === 'legacy' && error instanceof SdkHttpError && error.status === 404)) {
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

  /** Close the connection (and the 2025 session's GET stream). */
  async close(): Promise<void> {
    await this.client.close().catch(() => {});
  }

  private reinitialize(): Promise<void> {
    this.reconnecting ??= (async () => {
      const previous = this.protocolVersion;
      const client = await McpSession.connect(this.options, 'legacy');
      if (client.getNegotiatedProtocolVersion() !== previous) {
        await client.close().catch(() => {});
        throw new TasksConnectionError(`${this.options.url.href} now negotiates MCP ${client.getNegotiatedProtocolVersion() ?? 'unknown'} instead of ${previous}`, false);
      }
      await this.client.close().catch(() => {});
      this.client = client;
    })().finally(() => {
      this.reconnecting = undefined;
    });
    return this.reconnecting;
  }
}
