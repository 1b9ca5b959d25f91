import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import type { JSONRPCMessage, MessageExtraInfo, Transport, TransportSendOptions } from '@modelcontextprotocol/server';

/**
 * The SDK's stdio transport with one interception: JSON-RPC responses to our own server→client requests (v1
 * elicitation replies) are handed to `route` instead of the SDK, which never sent them and would drop them.
 */
export class InputRoutingStdioTransport implements Transport {
  private readonly inner = new StdioServerTransport();
  private handler: ((message: JSONRPCMessage, extra?: MessageExtraInfo) => void) | undefined;

  /**
   * @param ours - decides synchronously whether a message is a reply to one of our requests (others keep their order)
   * @param route - takes such a reply
   */
  constructor(
    ours: (message: unknown) => boolean,
    route: (message: unknown) => Promise<unknown>,
    onRouteError: (error: unknown) => void,
  ) {
    this.inner.onmessage = (message) => {
      if (ours(message)) void route(message).catch(onRouteError);
      else this.handler?.(message);
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
    this.inner.onerror = handler;
  }

  get onerror(): ((error: Error) => void) | undefined {
    return this.inner.onerror;
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
