/**
 * Text written into a file at known positions, so that what was written since a mark can be taken back: the
 * `--output` renderer writes a content block's text before it knows the block's type (JSON keys have no order).
 */
import type { FileHandle } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';

/** Something text is written to. */
export interface TextOut {
  write(text: string): void;
}

/** Bytes of a file read back at a time by {@link FileOutput.append}. */
const COPY_BYTES = 64 * 1024;

/**
 * Text going into a file: held between {@link flush}es (one piece of input's worth), written at known positions so
 * that {@link rewind} can take back what was written since a mark.
 */
export class FileOutput implements TextOut {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private flushed = 0;
  private truncateTo: number | undefined;

  constructor(private readonly file: FileHandle) {}

  /** Bytes of the output so far. */
  get position(): number {
    return this.flushed + this.pendingBytes;
  }

  write(text: string): void {
    if (text.length === 0) return;
    const bytes = Buffer.from(text, 'utf8');
    this.pending.push(bytes);
    this.pendingBytes += bytes.length;
  }

  /** Forget everything after `position` (a {@link position} read earlier). */
  rewind(position: number): void {
    if (position >= this.flushed) {
      const kept = Buffer.concat(this.pending, this.pendingBytes).subarray(0, position - this.flushed);
      this.pending = [kept];
      this.pendingBytes = kept.length;
      return;
    }
    this.truncateTo = position;
    this.flushed = position;
    this.pending = [];
    this.pendingBytes = 0;
  }

  async flush(): Promise<void> {
    if (this.truncateTo !== undefined) {
      await this.file.truncate(this.truncateTo);
      this.truncateTo = undefined;
    }
    const pending = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    for (const bytes of pending) {
      await this.file.write(bytes, 0, bytes.length, this.flushed);
      this.flushed += bytes.length;
    }
  }

  /**
   * Append the text of `source` (another output, flushed here), a piece at a time.
   * @returns its last character ('' when empty).
   */
  async append(source: FileOutput): Promise<string> {
    await source.flush();
    const decoder = new StringDecoder('utf8');
    const buffer = Buffer.alloc(COPY_BYTES);
    let last = '';
    for (let position = 0; position < source.position;) {
      const { bytesRead } = await source.file.read(buffer, 0, COPY_BYTES, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      const text = decoder.write(buffer.subarray(0, bytesRead));
      this.write(text);
      if (text.length > 0) last = text[text.length - 1] as string;
      await this.flush();
    }
    const rest = decoder.end();
    this.write(rest);
    return rest.length > 0 ? (rest[rest.length - 1] as string) : last;
  }
}
