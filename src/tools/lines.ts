/**
 * Streaming line reader for plain and gzip files: never holds more than one chunk and one (capped) line in
 * memory, checks the abort signal and yields to the event loop as a {@link Pacer} decides (every 10,000 lines or
 * 20 ms, whichever comes first), so that lines that are slow to process (the cost of a line depends on the
 * input) cannot stall the server. It can refuse binary content (see {@link isBinaryBlock}), checked on every
 * chunk as read, after decompression.
 */
import type { FileHandle } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
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

/**
 * Calls `onLine` for every line of `file` (without its `\n` or `\r\n`; a final line without a terminator
 * counts too).
 *
 * @param file - opened by the caller (tools: `Confinement.openForReading`, so no denied file is read); closed here.
 * @returns the number of lines read.
 * @throws the signal's reason when aborted; {@link BinaryContentError} (with `rejectBinary`); read and gunzip
 *   errors as they are.
 */
export async function forEachLine(
  file: FileHandle,
  onLine: (line: string) => void,
  options: LineReaderOptions,
): Promise<number> {
  const maxLength = options.maxLineLength ?? MAX_LINE_LENGTH;
  // The signal also destroys the stream, so an abort is noticed while a read is pending (a slow disk or a pipe).
  const source = file.createReadStream({ highWaterMark: CHUNK_BYTES, signal: options.signal });
  let text: Readable = source;
  if (options.gzip) {
    const gunzip = createGunzip();
    // pipeline destroys both streams on error or early exit, so a read error or a corrupt archive fails the
    // iteration below; its own promise carries the same error and is only silenced here.
    pipeline(source, gunzip).catch(() => {});
    text = gunzip;
  }
  // Decoded here rather than by the stream so that the bytes can be checked first; a character split between two
  // chunks is kept by the decoder.
  const decoder = new StringDecoder('utf8');
  const pacer = new Pacer(options.signal);
  let count = 0;
  let bytes = 0;
  let carry = '';
  let overlong = false;
  const emit = (line: string) => {
    onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
    count++;
  };
  try {
    for await (const block of text as AsyncIterable<Buffer>) {
      if (options.rejectBinary && isBinaryBlock(block)) throw new BinaryContentError(bytes);
      bytes += block.length;
      const chunk = decoder.write(block);
      let start = 0;
      for (let end = chunk.indexOf('\n'); end !== -1; end = chunk.indexOf('\n', start)) {
        const piece = chunk.slice(start, end);
        start = end + 1;
        const line = overlong ? carry : carry === '' ? capped(piece, maxLength) : capped(carry + piece, maxLength);
        emit(line);
        carry = '';
        overlong = false;
        if (pacer.due(line.length)) await pacer.pause();
      }
      if (!overlong) {
        carry += chunk.slice(start);
        // A line longer than the cap keeps its head only; the tail is skipped up to the next newline.
        if (carry.length > maxLength) {
          carry = carry.slice(0, maxLength);
          overlong = true;
        }
      }
    }
    if (!overlong) carry = capped(carry + decoder.end(), maxLength);
    if (carry !== '') emit(carry);
  } catch (error) {
    throw options.signal.aborted ? options.signal.reason : error;
  } finally {
    text.destroy();
    source.destroy();
  }
  options.signal.throwIfAborted();
  return count;
}

function capped(line: string, maxLength: number): string {
  return line.length > maxLength ? line.slice(0, maxLength) : line;
}
