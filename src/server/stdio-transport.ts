import type { Writable } from 'node:stream';

import type { JSONRPCMessage, MessageExtraInfo, Transport, TransportSendOptions } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';

import { ErrorCode } from '../protocol/constants.js';

/**
 * The JSON-RPC error for a line that is JSON but not a JSON-RPC message (the SDK's schema refused it), or
 * `undefined` for other transport errors. Lines that are not JSON at all never get here: the SDK skips them as
 * stray output, by design.
 */
function unreadableLineError(error: Error): { code: number; message: string } | undefined {
  return error.name === 'ZodError' ? { code: ErrorCode.InvalidRequest, message: 'Invalid request: the line is not a JSON-RPC message' } : undefined;
}

/**
 * The SDK's stdio transport with two interceptions: JSON-RPC responses to our own server→client requests (v1
 * elicitation replies) are handed to `route` instead of the SDK, which never sent them and would drop them; and a
 * JSON line that is not a JSON-RPC message is answered `-32600` with `id: null` as JSON-RPC 2.0 §5 requires (the
 * SDK only reports it to `onerror`, leaving the client waiting; found by the hostile-input fuzzer).
 */
export class InputRoutingStdioTransport implements Transport {
  private readonly inner: StdioServerTransport;
  private handler: ((message: JSONRPCMessage, extra?: MessageExtraInfo) => void) | undefined;
  private errorHandler: ((error: Error) => void) | undefined;

  /**
   * @param ours - decides synchronously whether a message is a reply to one of our requests (others keep their order)
   * @param route - takes such a reply
   * @param stdout - where the messages go (default `process.stdout`; `serve --stdio` passes the stream it reserved,
   *   see `reserveStdoutForProtocol`)
   */
  constructor(
    ours: (message: unknown) => boolean,
    route: (message: unknown) => Promise<unknown>,
    onRouteError: (error: unknown) => void,
    stdout: NodeJS.WritableStream = process.stdout,
  ) {
    this.inner = new StdioServerTransport(process.stdin, stdout as Writable);
    this.inner.onmessage = (message) => {
      if (ours(message)) void route(message).catch(onRouteError);
      else this.handler?.(message);
    };
    this.inner.onerror = (error) => {
      const answer = unreadableLineError(error);
      if (answer) void this.inner.send({ jsonrpc: '2.0', id: null, error: answer } as unknown as JSONRPCMessage).catch(() => undefined);
      this.errorHandler?.(error);
    };
  }

  set onmessage(handler: ((message: JSONRPCMessage, extra?: MessageExtraInfo) => void) | undefined) {
    this.handler = handler;
  }

  get onmessage(): ((message: JSONRPCMessage, extra?: MessageExtraInfo) => void) | undefined {
    return this.handler;
  }

  set onclose(handler: (() => void) | undefined) {
    this.inner.onclose = handler;
  }

  get onclose(): (() => void) | undefined {
    return this.inner.onclose;
  }

  set onerror(handler: ((error: Error) => void) | undefined) {
    this.errorHandler = handler;
  }

  get onerror(): ((error: Error) => void) | undefined {
    return this.errorHandler;
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  send(message: JSONRPCMessage, _options?: TransportSendOptions): Promise<void> {
    return this.inner.send(message);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
