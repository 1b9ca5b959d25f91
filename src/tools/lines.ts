/**
 * Streaming line reader for plain and gzip files: never holds more than one chunk and one (capped) line in
 * memory, checks the abort signal and yields to the event loop as a {@link Pacer} decides (every 10,000 lines or
 * 20 ms, whichever comes first), so that lines that are slow to process (the cost of a line depends on the
 * input) cannot stall the server. It can refuse binary content (see {@link isBinaryBlock}), checked on every
 * chunk as read, after decompression. Lines are split on bytes, so every line comes with the byte offset where
 * it starts, and a read can start at such an offset (to resume a scan inside a large file).
 */
import type { FileHandle } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';

import { isBinaryBlock } from './binary.js';
import { Pacer } from './yield.js';

/** Options of {@link forEachLine}. */
export interface LineReaderOptions {
  signal: AbortSignal;
  /** Decompress with gunzip while reading. */
  gzip?: boolean;
  /** Characters kept of a longer line (the rest is dropped). Default {@link MAX_LINE_LENGTH}. */
  maxLineLength?: number;
  /** Stop with a {@link BinaryContentError} at the first chunk that is binary data. Default: read it as text. */
  rejectBinary?: boolean;
  /**
   * Byte offset (of the decompressed content) to start at: a line start reported earlier. A plain file is read
   * from there; a gzip file is decompressed from its start and the bytes before are skipped unread.
   */
  startOffset?: number;
}

/** Characters kept of a line by default: longer lines keep their head, the tail is skipped. */
export const MAX_LINE_LENGTH = 16_384;

/** The file turned out to hold binary data (see {@link LineReaderOptions.rejectBinary}). */
export class BinaryContentError extends Error {
  /** @param byteOffset - where the binary chunk starts in the (decompressed) content; 0: binary from the start. */
  constructor(readonly byteOffset: number) {
    super(`binary content at byte ${byteOffset}; not read from there`);
    this.name = 'BinaryContentError';
  }
}

const CHUNK_BYTES = 256 * 1024;
/** UTF-8 takes at most 4 bytes per character: the bytes of a line kept before it is decoded and cut. */
const BYTES_PER_CHARACTER = 4;

/**
 * Called for every line; may return a promise, which is awaited before the next line (most handlers are
 * synchronous and cost no promise).
 *
 * @param offset - byte offset of the line's start in the (decompressed) content.
 */
export type LineHandler = (line: string, offset: number) => void | Promise<void>;

/**
 * Calls `onLine` for every line of `file` (without its `\n` or `\r\n`; a final line without a terminator
 * counts too).
 *
 * @param file - opened by the caller (tools: `Confinement.openForReading`, so no denied file is read); closed here.
 * @returns the number of lines read and the offset after the last byte read.
 * @throws the signal's reason when aborted; {@link BinaryContentError} (with `rejectBinary`); read and gunzip
 *   errors as they are; what `onLine` throws.
 */
export async function forEachLine(file: FileHandle, onLine: LineHandler, options: LineReaderOptions): Promise<number> {
  const maxLength = options.maxLineLength ?? MAX_LINE_LENGTH;
  const maxBytes = maxLength * BYTES_PER_CHARACTER;
  const startOffset = options.startOffset ?? 0;
  // The signal also destroys the stream, so an abort is noticed while a read is pending (a slow disk or a pipe).
  const source = file.createReadStream({
    highWaterMark: CHUNK_BYTES,
    signal: options.signal,
    ...(startOffset > 0 && !options.gzip ? { start: startOffset } : {}),
  });
  let text: Readable = source;
  if (options.gzip) {
    const gunzip = createGunzip();
    // pipeline destroys both streams on error or early exit, so a read error or a corrupt archive fails the
    // iteration below; its own promise carries the same error and is only silenced here.
    pipeline(source, gunzip).catch(() => {});
    text = gunzip;
  }
  const pacer = new Pacer(options.signal);
  let count = 0;
  // Offset of the first byte of the current block in the content.
  let blockOffset = options.gzip ? 0 : startOffset;
  const skipUntil = options.gzip ? startOffset : 0;
  // Bytes of the current line read in earlier blocks (at most maxBytes), and where the line started.
  const carry: Buffer[] = [];
  let carried = 0;
  let lineStart = blockOffset;
  // Synchronous unless the handler or the pacer returns a promise: a promise per line costs more than most
  // handlers' work.
  const counted = (characters: number): Promise<void> | undefined => {
    count++;
    return pacer.due(characters) ? pacer.pause() : undefined;
  };
  // The line is decoded from its range of the block: no Buffer object per line.
  const emit = (bytes: Buffer, begin: number, end: number, start: number): Promise<void> | undefined => {
    let line = bytes.toString('utf8', begin, end);
    if (line.endsWith('\r')) line = line.slice(0, -1);
    if (line.length > maxLength) line = line.slice(0, maxLength);
    const pending = onLine(line, start);
    const characters = line.length;
    return pending ? pending.then(() => counted(characters)) : counted(characters);
  };
  try {
    for await (const chunk of text as AsyncIterable<Buffer>) {
      let block = chunk;
      if (blockOffset + block.length <= skipUntil) {
        blockOffset += block.length;
        lineStart = blockOffset;
        continue;
      }
      if (blockOffset < skipUntil) {
        block = block.subarray(skipUntil - blockOffset);
        blockOffset = skipUntil;
        lineStart = blockOffset;
      }
      if (options.rejectBinary && isBinaryBlock(block)) throw new BinaryContentError(blockOffset);
      let from = 0;
      for (let newline = block.indexOf(10); newline !== -1; newline = block.indexOf(10, from)) {
        let pending: Promise<void> | undefined;
        if (carried > 0) {
          carry.push(block.subarray(from, Math.max(from, Math.min(newline, from + maxBytes - carried))));
          const bytes = Buffer.concat(carry);
          carry.length = 0;
          carried = 0;
          pending = emit(bytes, 0, bytes.length, lineStart);
        } else {
          pending = emit(block, from, Math.min(newline, from + maxBytes), lineStart);
        }
        if (pending) await pending;
        from = newline + 1;
        lineStart = blockOffset + from;
      }
      // The rest of the block starts (or continues) a line; beyond the cap its tail is dropped.
      if (from < block.length && carried < maxBytes) {
        const piece = block.subarray(from, Math.min(block.length, from + maxBytes - carried));
        // Copied: the stream may reuse the block's memory.
        carry.push(Buffer.from(piece));
        carried += piece.length;
      }
      blockOffset += block.length;
    }
    if (carried > 0) {
      const bytes = Buffer.concat(carry);
      const pending = emit(bytes, 0, bytes.length, lineStart);
      if (pending) await pending;
    }
  } catch (error) {
    throw options.signal.aborted ? options.signal.reason : error;
  } finally {
    text.destroy();
    source.destroy();
  }
  options.signal.throwIfAborted();
  return count;
}
