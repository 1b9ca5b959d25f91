/**
 * The connection of this process to one upstream MCP server (issue 28), through the official SDK client
 * (`@modelcontextprotocol/client`: `Client` with `StdioClientTransport` or `StreamableHTTPClientTransport`).
 *
 * Why it lives in the worker process and not in an isolated thread: a forwarded call is I/O — a JSON-RPC request
 * out, notifications and one answer back — and no user code of ours runs for it, so nothing here can block the event
 * loop or exhaust a heap the way a tool can; the isolated executor exists for tools' code. Keeping the connection in
 * the process also keeps one upstream child (stdio) per process instead of one per thread.
 *
 * A stdio upstream is spawned by each process that runs calls (`serve` with its worker, each `worker`), with the
 * SDK's default environment (PATH, HOME and the like; never this server's secrets). When the connection closes
 * (the child died, the server went away), the calls in flight fail at once (`upstream_down`: they may have done part
 * of their work, so none is sent again) and the connection is re-made with backoff (250 ms doubling to 30 s, back to
 * 250 ms once a connection stayed up 30 s). Calls made while it is down wait up to {@link CONNECT_WAIT_MS} for it.
 */
import { Client, type ReadBuffer, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import type { UpstreamStatus } from '../core/executor.js';
import { MAX_TIMER_MS } from '../core/limits.js';
import type { Logger } from '../core/logger.js';
import type { JsonObject } from '../core/task.js';
import type { ElicitResult } from '../core/tool.js';
import { callerHeaders, callerOwner } from './caller-identity.js';
import { unplacedQuestion } from './elicitation.js';
import { connectionFailed, forwardFailure, quoteUpstream, unavailable } from './outcome.js';
import type { UpstreamSpec } from './spec.js';
import { ProcessGroupStdioTransport } from './stdio-process-group.js';
import { LinearReadBuffer, ReadBufferOverflowError } from './stdio-read-buffer.js';

/** A tool as the upstream lists it (the fields we use; the schemas are kept as the upstream gave them). */
export interface UpstreamTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: JsonObject;
  outputSchema?: JsonObject;
  annotations?: JsonObject;
  /** 2025-11-25: whether the upstream runs the tool as a task (`required` ones are left out, see `gateway.ts`). */
  execution?: { taskSupport?: string };
}

/** Progress of a forwarded call, as the upstream reported it. */
export interface UpstreamProgress {
  progress: number;
  total?: number;
  message?: string;
}

/** What one forwarded call hears back besides its answer. */
export interface CallListeners {
  /** The upstream's `notifications/progress` for this call. */
  progress(progress: UpstreamProgress): void;
  /**
   * An `elicitation/create` the upstream sent while this call was the only one in flight (see `elicitation.ts`);
   * resolves with the answer to send back, or rejects (the upstream then gets an error).
   */
  elicit(params: unknown): Promise<ElicitResult>;
}

/** Our log level for each MCP logging level an upstream sends. */
const LOG_LEVELS: Record<string, 'debug' | 'info' | 'warn' | 'error'> = {
  debug: 'debug',
  info: 'info',
  notice: 'info',
  warning: 'warn',
  error: 'error',
  critical: 'error',
  alert: 'error',
  emergency: 'error',
};

/** How long a call waits for a connection that is being (re)made before it fails `upstream_unavailable` (ms). */
export const CONNECT_WAIT_MS = 5000;
/** First and longest pause before reconnecting (ms), and how long a connection must last to reset the pause. */
const BACKOFF = { initialMs: 250, maxMs: 30_000, stableMs: 30_000 };
/**
 * The SDK's request timeout for a forwarded call: none in effect (the largest timer Node keeps). Our runtime limit,
 * TTL and cancellation end a call through its signal instead.
 */
const NO_TIMEOUT_MS = MAX_TIMER_MS;

/**
 * The SDK's stdio transport whose `close` can be awaited by every caller: the SDK's own `close` forgets the child at
 * once, so a second call returns before the child is gone — and the SDK client closes a connection whose
 * `initialize` failed without waiting. Awaiting this one waits for the teardown (input closed, SIGTERM after 2 s,
 * SIGKILL after 2 s more) wherever it started — of the child's whole process group, so a server started through a
 * launcher (`npx`, `sh -c`) ends with it (see `stdio-process-group.ts`).
 */
export class StdioTransport extends ProcessGroupStdioTransport {
  private closing: Promise<void> | undefined;

  constructor(params: ConstructorParameters<typeof StdioClientTransport>[0] & { maxBufferSize: number }) {
    super(params);
    // The SDK's read buffer is quadratic in a message's size (see LinearReadBuffer); its field is replaced before
    // start(). A test checks the field is still there and is ours, so an SDK that renames it fails loudly.
    (this as unknown as { _readBuffer: ReadBuffer })._readBuffer = new LinearReadBuffer(params.maxBufferSize);
  }

  override close(): Promise<void> {
    this.closing ??= super.close();
    return this.closing;
  }
}

/** What a connection is built from. */
export interface UpstreamConnectionOptions {
  spec: UpstreamSpec;
  logger: Logger;
  /** Our `clientInfo.version` in the upstream's `initialize`. */
  clientVersion: string;
  /**
   * The largest result a task may store (`limits.maxStoredResultBytes`, bytes): a stdio upstream's answers are read
   * up to it plus {@link ENVELOPE_BYTES} (see {@link stdioReadLimit}).
   */
  maxResultBytes: number;
  /**
   * Longest wait for the `initialize` and `tools/list` answers of one connection (ms), at start and at every
   * reconnect (`upstreamStartTimeoutMs`): the SDK's request timeout (60 s) is not ours to depend on.
   */
  startTimeoutMs: number;
  /** Send the caller's identity with each call (an HTTP upstream named in `upstreamsForwardIdentity`). */
  forwardIdentity?: boolean;
}

/** Room for the JSON-RPC envelope of an answer and the start of the next message in the stdio read buffer (bytes). */
const ENVELOPE_BYTES = 1024 * 1024;

/**
 * How many bytes of a stdio upstream's output are buffered before a message must be complete: our stored-result
 * limit plus the envelope. The SDK's stdio transport stops at 10 MiB by default; an answer past its limit closes the
 * connection (the transport cannot tell which request it answered), so the limit is set to what we could store anyway.
 */
export function stdioReadLimit(maxResultBytes: number): number {
  return maxResultBytes + ENVELOPE_BYTES;
}

/** One upstream's connection, re-made when it closes (see the module comment). */
export class UpstreamConnection {
  private client: Client | undefined;
  /** The connection being made, until it is ready or has failed (closed by {@link close} too). */
  private connecting: Client | undefined;
  private state: UpstreamStatus['state'] = 'connecting';
  /** Successful reconnections, and reconnection attempts that failed. */
  private restarts = 0;
  private failedRestarts = 0;
  private lastError: string | undefined;
  private retryAt: number | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private delayMs = BACKOFF.initialMs;
  private connectedAt = 0;
  private listed: UpstreamTool[] = [];
  /** Woken when the state changes (calls waiting for a connection). */
  private readonly waiters = new Set<() => void>();
  /** Set when the stdio transport dropped the connection because an answer outgrew {@link stdioReadLimit}. */
  private oversized: string | undefined;
  /** The last line the stdio child wrote to stderr (its last words when it dies). */
  private lastStderr: string | undefined;
  private pid: number | null = null;
  /**
   * Progress of the calls in flight by our progressToken. Read off the transport before the SDK sees the message:
   * the SDK client handles a response before a notification that arrived just ahead of it, and drops that
   * notification as one "for an unknown token" — the last progress a server sends before its result.
   */
  private readonly listeners = new Map<string, CallListeners>();
  // Its size is the number of calls in flight (each call is listed from its send to its answer).
  private progressTokens = 0;

  constructor(private readonly options: UpstreamConnectionOptions) {}

  get name(): string {
    return this.options.spec.name;
  }

  /**
   * Connect and list the upstream's tools (every page). The first connection is made once, no retry: a server
   * that cannot start is a configuration problem to report at start.
   * A failed start leaves nothing behind: the connection is closed (a stdio child ended) before this rejects.
   * @throws Error with one line saying why (the process exited, the URL refused, no answer within `startTimeoutMs`).
   */
  async start(): Promise<UpstreamTool[]> {
    try {
      await this.connect();
    } catch (error) {
      const why = this.lastStderr ? `${messageOf(error)}; its last output: ${quoteUpstream(this.lastStderr)}` : messageOf(error);
      await this.close();
      throw new Error(why, { cause: error });
    }
    return this.listed;
  }

  /** The tools the upstream listed at the first connection. */
  tools(): UpstreamTool[] {
    return this.listed;
  }

  /**
   * Forward one `tools/call`: `signal` aborts it (the SDK sends `notifications/cancelled` upstream and the promise
   * rejects with the abort reason), `listeners` hear its progress and the questions it asks.
   * @throws TasksError `-32603` with `data.reason` `upstream_down`, `upstream_unavailable` or `upstream_error` (see
   *   `outcome.ts`); the abort reason when `signal` aborted.
   */
  async call(tool: string, args: JsonObject, signal: AbortSignal, listeners: CallListeners): Promise<unknown> {
    const client = await this.connected(tool, signal);
    const progressToken = `mcp-tasks-${++this.progressTokens}`;
    this.listeners.set(progressToken, listeners);
    try {
      // The caller's identity, for an upstream configured to get it (see caller-identity.ts).
      const headers = this.options.forwardIdentity ? callerHeaders(callerOwner.getStore()) : undefined;
      return await client.callTool(
        { name: tool, arguments: args, _meta: { progressToken } },
        { signal, timeout: NO_TIMEOUT_MS, ...(headers ? { headers } : {}) },
      );
    } catch (error) {
      if (signal.aborted) throw error;
      // The connection this call went out on closed under it (the SDK rejects its pending requests first).
      const lost = this.client !== client ? (this.lastError ?? 'its connection closed') : undefined;
      // An HTTP upstream has no connection to watch: a failed request is how we learn it went away (or lost our session).
      if (lost === undefined && this.options.spec.transport === 'http' && connectionFailed(error)) this.drop(client, messageOf(error));
      throw forwardFailure(error, { upstream: this.name, tool, lost });
    } finally {
      this.listeners.delete(progressToken);
    }
  }

  /** The pid of the stdio child this connection speaks to now, if any. */
  childPid(): number | undefined {
    return this.pid ?? undefined;
  }

  /** How the connection stands now (for `/readyz` and the banner). */
  status(): UpstreamStatus {
    const { spec } = this.options;
    return {
      name: spec.name,
      transport: spec.transport,
      state: this.state,
      tools: this.listed.length,
      restarts: this.restarts,
      failedRestarts: this.failedRestarts,
      inFlight: this.listeners.size,
      ...(this.state === 'restarting' && this.retryAt !== undefined ? { retryInMs: Math.max(0, this.retryAt - Date.now()) } : {}),
      ...(this.lastError === undefined ? {} : { error: this.lastError }),
    };
  }

  /** Close the connection for good (a stdio child is ended); calls in flight fail `upstream_down`. */
  async close(): Promise<void> {
    this.setState('closed');
    clearTimeout(this.retryTimer);
    const clients = [this.client, this.connecting];
    this.client = undefined;
    this.connecting = undefined;
    this.pid = null;
    await Promise.all(clients.map((client) => client?.close().catch(() => undefined)));
  }

  private async connected(tool: string, signal: AbortSignal): Promise<Client> {
    const deadline = Date.now() + CONNECT_WAIT_MS;
    while (!this.client) {
      if (this.state === 'closed' || Date.now() >= deadline) throw unavailable(this.name, tool, this.lastError);
      if (signal.aborted) throw signal.reason;
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          signal.removeEventListener('abort', wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.max(0, deadline - Date.now()));
        this.waiters.add(wake);
        signal.addEventListener('abort', wake, { once: true });
      });
    }
    return this.client;
  }

  private setState(state: UpstreamStatus['state']): void {
    this.state = state;
    for (const wake of [...this.waiters]) wake();
  }

  /**
   * Make one connection: initialize, list every tool, then watch for it closing. Both answers must come within
   * `startTimeoutMs`; on any failure the connection is closed (a stdio child ended: SIGTERM, then SIGKILL) before this
   * rejects, so no process is left behind.
   */
  private async connect(): Promise<void> {
    // Elicitation is declared so upstreams offer their asking tools (some list them only then) and may ask.
    const client = new Client({ name: 'mcp-tasks-gateway', version: this.options.clientVersion }, { capabilities: { elicitation: { form: {}, url: {} } } });
    client.setRequestHandler('elicitation/create', (request) => this.elicited(request.params) as never);
    client.setNotificationHandler('notifications/message', (notification) => this.logged(notification.params));
    const transport = this.transport();
    this.connecting = client;
    try {
      await this.handshake(client, transport);
    } catch (error) {
      // Awaited: the SDK closes a client whose initialize failed without waiting (see StdioTransport).
      await Promise.all([client.close().catch(() => undefined), transport.close().catch(() => undefined)]);
      throw error;
    } finally {
      if (this.connecting === client) this.connecting = undefined;
    }
  }

  private async handshake(client: Client, transport: StdioClientTransport | StreamableHTTPClientTransport): Promise<void> {
    const { startTimeoutMs } = this.options;
    const deadline = AbortSignal.timeout(startTimeoutMs);
    const timedOut = (): Error => new Error(`no answer to initialize and tools/list within ${startTimeoutMs} ms`);
    let closed = false;
    client.onclose = () => {
      closed = true;
      this.lost(client);
    };
    client.onerror = (error) => {
      // Our read buffer throws it; the SDK's stdio transport reports it here, then closes (and ends the child).
      if (error instanceof ReadBufferOverflowError)
        this.oversized = `an answer larger than ${stdioReadLimit(this.options.maxResultBytes)} bytes, more than a task may store, closed the connection`;
      this.options.logger.debug({ upstream: this.name, err: error }, 'upstream connection error');
    };
    await client.connect(transport, { timeout: startTimeoutMs, signal: deadline }).catch((error: unknown) => {
      throw deadline.aborted ? timedOut() : error;
    });
    // Both transports call onmessage(message, extra?); the SDK set it in connect(), so it is wrapped after.
    const wired = transport as { onmessage?: (message: unknown, extra?: unknown) => void };
    const dispatch = wired.onmessage;
    wired.onmessage = (message, extra) => {
      if (!this.tookProgress(message)) dispatch?.(message, extra);
    };
    if (transport instanceof StdioClientTransport) this.pid = transport.pid;
    const first = this.listed.length === 0;
    const { tools } = await client.listTools(undefined, { timeout: startTimeoutMs, signal: deadline }).catch((error: unknown) => {
      throw deadline.aborted ? timedOut() : error;
    });
    if (closed || this.state === 'closed') throw new Error(this.lastError ?? 'the connection closed during start-up');
    const listed = tools as unknown as UpstreamTool[];
    if (first) this.listed = listed;
    else if (names(listed) !== names(this.listed))
      this.options.logger.warn({ upstream: this.name }, 'upstream lists other tools after reconnecting; the tools listed at start are kept until a restart');
    this.client = client;
    this.connectedAt = Date.now();
    this.retryAt = undefined;
    this.setState('ready');
  }

  private transport(): StdioClientTransport | StreamableHTTPClientTransport {
    const { spec } = this.options;
    if (spec.transport === 'http') return new StreamableHTTPClientTransport(new URL(spec.url));
    const transport = new StdioTransport({
      command: spec.command,
      args: spec.args,
      stderr: 'pipe',
      maxBufferSize: stdioReadLimit(this.options.maxResultBytes),
    });
    transport.stderr?.on('data', (chunk: Buffer) => {
      const lines = chunk
        .toString('utf8')
        .split('\n')
        .map((line) => line.trim())
        .filter(Boolean);
      if (lines.length > 0) this.lastStderr = lines.at(-1);
      for (const line of lines) this.options.logger.debug({ upstream: this.name, line }, 'upstream stderr');
    });
    return transport;
  }

  /** Deliver `message` when it is progress of one of our calls in flight (see {@link listeners}); `true` if it was. */
  private tookProgress(message: unknown): boolean {
    const { method, params } = message as { method?: unknown; params?: { progressToken?: unknown; progress?: unknown; total?: unknown; message?: unknown } };
    if (method !== 'notifications/progress' || typeof params?.progressToken !== 'string' || typeof params.progress !== 'number') return false;
    const handler = this.listeners.get(params.progressToken);
    if (!handler) return false;
    handler.progress({
      progress: params.progress,
      ...(typeof params.total === 'number' ? { total: params.total } : {}),
      ...(typeof params.message === 'string' ? { message: params.message } : {}),
    });
    return true;
  }

  /**
   * An upstream's `notifications/message` (MCP logging) in our log under the upstream's name, at the nearest level
   * (`notice` is info; `critical`, `alert` and `emergency` are error). A log message names no call (many are not
   * about one: server-everything's simulated logging), so it is logged for the connection; our logger redacts it
   * like every line.
   */
  private logged(params: { level?: unknown; logger?: unknown; data?: unknown }): void {
    const level = LOG_LEVELS[String(params.level)] ?? 'info';
    this.options.logger[level](
      { upstream: this.name, ...(typeof params.logger === 'string' ? { upstreamLogger: params.logger } : {}), data: params.data },
      'upstream log',
    );
  }

  /** An upstream's `elicitation/create`: given to the one call in flight, refused otherwise (see `elicitation.ts`). */
  private async elicited(params: unknown): Promise<ElicitResult> {
    const calls = [...this.listeners.values()];
    if (calls.length !== 1) {
      this.options.logger.warn({ upstream: this.name, inFlight: calls.length }, 'upstream asked for input that cannot be placed with one call; refused');
      throw unplacedQuestion(calls.length);
    }
    return (calls[0] as CallListeners).elicit(params);
  }

  /** `client` failed a request in a way that says its connection is broken: close it and reconnect with backoff. */
  private drop(client: Client, why: string): void {
    if (this.reconnectAfter(client, why)) void client.close().catch(() => undefined);
  }

  /** The connection of `client` closed: fail over to a reconnect with backoff (unless we closed it). */
  private lost(client: Client): void {
    // A connection still being made reports its own failure (start() or the reconnect that made it).
    const why =
      this.oversized ??
      (this.options.spec.transport === 'stdio' ? `the process exited${this.lastStderr ? `: ${quoteUpstream(this.lastStderr)}` : ''}` : 'the connection closed');
    this.oversized = undefined;
    this.reconnectAfter(client, why);
  }

  /** Forget `client`, the live connection, because of `why`, and schedule the next one; `false` when it was not the live one. */
  private reconnectAfter(client: Client, why: string): boolean {
    if (this.state === 'closed' || this.client !== client) return false;
    this.client = undefined;
    this.pid = null;
    this.lastError = why;
    if (Date.now() - this.connectedAt >= BACKOFF.stableMs) this.delayMs = BACKOFF.initialMs;
    this.scheduleReconnect();
    return true;
  }

  private scheduleReconnect(): void {
    if (this.state === 'closed') return;
    const delay = this.delayMs;
    this.delayMs = Math.min(this.delayMs * 2, BACKOFF.maxMs);
    this.retryAt = Date.now() + delay;
    this.setState('restarting');
    this.options.logger.warn({ upstream: this.name, error: this.lastError, retryInMs: delay }, 'upstream connection lost; reconnecting');
    this.retryTimer = setTimeout(() => {
      this.lastStderr = undefined;
      this.connect().then(
        () => {
          this.restarts += 1;
          this.options.logger.info({ upstream: this.name, restarts: this.restarts }, 'upstream reconnected');
        },
        (error: unknown) => {
          if (this.state === 'closed') return;
          this.failedRestarts += 1;
          this.lastError = this.lastStderr ? `${messageOf(error)}; its last output: ${quoteUpstream(this.lastStderr)}` : messageOf(error);
          this.scheduleReconnect();
        },
      );
    }, delay);
    this.retryTimer.unref();
  }
}

function messageOf(error: unknown): string {
  return quoteUpstream(error instanceof Error ? error.message : String(error));
}

function names(tools: readonly UpstreamTool[]): string {
  return tools
    .map((tool) => tool.name)
    .sort()
    .join(',');
}
