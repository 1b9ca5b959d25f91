import { deserializeMessage, type JSONRPCMessage, ReadBuffer } from '@modelcontextprotocol/client';

/**
 * The read buffer of a stdio upstream's output (issue 28): the SDK's `ReadBuffer` with the same contract — lines of
 * JSON-RPC, a line that is not JSON skipped, at most `maxBufferSize` bytes held, the same error past it — but linear
 * in the size of a message. The SDK's copies everything it holds on every chunk (`Buffer.concat` per 64 KiB), so an
 * answer of n bytes costs O(n²): measured here, 12 MiB took 5.5 s and 32 MiB 33 s, blocking the event loop for over a
 * second at a time. With answers read up to the stored-result limit (64 MiB) that would stall every task of the
 * process. This one keeps the chunks and joins them once, when the line is complete.
 */
/** An upstream's output outgrew the read buffer: the SDK's words, our class (the connection tells it by its class). */
export class ReadBufferOverflowError extends Error {
  override readonly name = 'ReadBufferOverflowError';
  constructor(maxBytes: number) {
    super(`ReadBuffer exceeded maximum size of ${maxBytes} bytes`);
  }
}

export class LinearReadBuffer extends ReadBuffer {
  private chunks: Buffer[] = [];
  private length = 0;
  /** Bytes from the start already searched for a newline (none was there). */
  private scanned = 0;

  constructor(private readonly maxBytes: number) {
    super({ maxBufferSize: maxBytes });
  }

  override append(chunk: Buffer): void {
    if (this.length + chunk.length > this.maxBytes) {
      this.clear();
      throw new ReadBufferOverflowError(this.maxBytes);
    }
    this.chunks.push(chunk);
    this.length += chunk.length;
  }

  override readMessage(): JSONRPCMessage | null {
    for (;;) {
      const newline = this.newline();
      if (newline < 0) return null;
      const all = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks, this.length);
      const line = all.toString('utf8', 0, newline).replace(/\r$/, '');
      const rest = all.subarray(newline + 1);
      this.chunks = rest.length > 0 ? [rest] : [];
      this.length = rest.length;
      this.scanned = 0;
      try {
        return deserializeMessage(line);
      } catch (error) {
        if (!(error instanceof SyntaxError)) throw error;
      }
    }
  }

  override clear(): void {
    this.chunks = [];
    this.length = 0;
    this.scanned = 0;
  }

  /** The offset of the first newline held, searching only bytes not searched before; -1 when there is none. */
  private newline(): number {
    let offset = 0;
    for (const chunk of this.chunks) {
      if (offset + chunk.length > this.scanned) {
        const found = chunk.indexOf(0x0a, Math.max(0, this.scanned - offset));
        if (found >= 0) return offset + found;
      }
      offset += chunk.length;
    }
    this.scanned = this.length;
    return -1;
  }
}
