/**
 * `call|watch|resume --output FILE`: the result written to a file with bounded memory. A large result (tens of MiB)
 * is read back from the server as a stream of its JSON text (`TasksClient.readResultResourceTo`) and rendered as it
 * arrives — its text blocks, or with `--json` the `{taskId, status, result}` document — into a file that replaces
 * FILE only once complete.
 */
import { randomBytes } from 'node:crypto';
import { type FileHandle, open, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

import { writeFileAtomically } from '../client/atomic-file.js';
import { type TasksClient, TasksProtocolError } from '../client/index.js';
import { type JsonEvents, type JsonPath, JsonStreamError, JsonTokenizer } from '../client/json-stream.js';

/** Something text is written to. */
interface TextOut {
  write(text: string): void;
}

/**
 * Text going into a file: held between {@link flush}es (one piece of input's worth), written at known positions so
 * that {@link rewind} can take back what was written since a mark.
 */
class FileOutput implements TextOut {
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
}

/**
 * JSON events written again as `JSON.stringify(value, null, 2)` lays the value out, nested `depth` levels deep,
 * with one difference: an object's keys keep the order they came in (`JSON.parse` moves integer-like keys first,
 * and zod puts a tool result's known keys first) — the same JSON value, never held whole. `skipKey` leaves out that
 * key of the top-level object (a 2026-07-28 `resultType`, which the library removes from a result too).
 */
class JsonPrinter implements JsonEvents {
  private readonly counts: number[] = [];
  private afterKey = false;
  /** Containers open inside a value being left out, while one is. */
  private skipping: number | undefined;

  constructor(
    private readonly out: TextOut,
    private readonly depth = 0,
    private readonly skipKey?: string,
  ) {}

  startObject(): void {
    this.open('{');
  }
  startArray(): void {
    this.open('[');
  }
  endObject(): void {
    this.close('}');
  }
  endArray(): void {
    this.close(']');
  }
  key(name: string): void {
    if (this.skipping !== undefined) return;
    if (this.counts.length === 1 && name === this.skipKey) {
      this.skipping = 0;
      return;
    }
    this.separate();
    this.out.write(`${JSON.stringify(name)}: `);
    this.afterKey = true;
  }
  stringStart(): void {
    if (this.skipping === undefined) this.startValue('"');
  }
  stringChunk(text: string): void {
    if (this.skipping === undefined) this.out.write(JSON.stringify(text).slice(1, -1));
  }
  stringEnd(): void {
    if (this.skipping === undefined) this.out.write('"');
    else if (this.skipping === 0) this.skipping = undefined;
  }
  primitive(raw: string): void {
    if (this.skipping === undefined) this.startValue(JSON.stringify(JSON.parse(raw)));
    else if (this.skipping === 0) this.skipping = undefined;
  }

  private open(bracket: string): void {
    if (this.skipping !== undefined) {
      this.skipping += 1;
      return;
    }
    this.startValue(bracket);
    this.counts.push(0);
  }

  private close(bracket: string): void {
    if (this.skipping !== undefined) {
      this.skipping -= 1;
      if (this.skipping === 0) this.skipping = undefined;
      return;
    }
    const members = this.counts.pop();
    this.out.write(members === 0 ? bracket : `\n${this.indent()}${bracket}`);
  }

  private startValue(text: string): void {
    if (this.afterKey) this.afterKey = false;
    else this.separate();
    this.out.write(text);
  }

  /** Before a member of the open container: a comma after the one before, a new line, the indent. */
  private separate(): void {
    const open = this.counts.length;
    if (open === 0) return;
    this.out.write(this.counts[open - 1] === 0 ? '\n' : ',\n');
    this.counts[open - 1] = (this.counts[open - 1] as number) + 1;
    this.out.write(this.indent());
  }

  private indent(): string {
    return '  '.repeat(this.depth + this.counts.length);
  }
}

/** The result's JSON is not a tool result as the library accepts one (`CallToolResultSchema`). */
function notAToolResult(what: string): JsonStreamError {
  return new JsonStreamError(`not a tool result: ${what}`);
}

/**
 * Checks the shape `CallToolResultSchema` asks for while the result streams past: an object whose `content` is an
 * array of objects with a string `type`; `structuredContent` and `_meta` objects, `isError` a boolean.
 */
class ShapeCheck implements JsonEvents {
  private started = false;
  private content = false;

  startObject(path: JsonPath): void {
    this.check(path, 'object');
  }
  startArray(path: JsonPath): void {
    this.check(path, 'array');
  }
  stringStart(path: JsonPath): void {
    this.check(path, 'string');
  }
  primitive(raw: string, path: JsonPath): void {
    this.check(path, raw === 'true' || raw === 'false' ? 'boolean' : 'other');
  }
  key(name: string, path: JsonPath): void {
    if (path.length === 2 && path[0] === 'content' && name === 'type') this.typed.add(path[1] as number);
  }
  endObject(): void {}
  endArray(): void {}
  stringChunk(): void {}
  stringEnd(): void {}

  private readonly typed = new Set<number>();
  private blocks = 0;

  /** @throws JsonStreamError when the whole result was not a tool result. */
  finish(): void {
    if (!this.content) throw notAToolResult('no content array');
    for (let index = 0; index < this.blocks; index += 1) if (!this.typed.has(index)) throw notAToolResult(`content block ${index} has no type`);
  }

  private check(path: JsonPath, kind: 'object' | 'array' | 'string' | 'boolean' | 'other'): void {
    if (path.length === 0) {
      if (kind !== 'object' || this.started) throw notAToolResult('not a JSON object');
      this.started = true;
    } else if (path.length === 1) {
      const expected = ({ content: 'array', structuredContent: 'object', _meta: 'object', isError: 'boolean' } as Record<string, string>)[path[0] as string];
      if (expected !== undefined && expected !== kind) throw notAToolResult(`${String(path[0])} is not ${expected === 'array' ? 'an' : 'a'} ${expected}`);
      if (path[0] === 'content') this.content = true;
    } else if (path.length === 2 && path[0] === 'content') {
      if (kind !== 'object') throw notAToolResult(`content block ${String(path[1])} is not an object`);
      this.blocks = Math.max(this.blocks, (path[1] as number) + 1);
    } else if (path.length === 3 && path[0] === 'content' && path[2] === 'type' && kind !== 'string') {
      throw notAToolResult(`content block ${String(path[1])} has a type that is not a string`);
    }
  }
}

/**
 * The text `--output` writes without `--json`, as the result streams past — what `resultText` makes of the whole
 * result, plus a final newline: each content block's `text` for a `text` block, `[<type> content omitted; use
 * --json]` for any other, one newline between them; for a result without content blocks its `structuredContent`
 * laid out as JSON. A block's text is written as it arrives even when its `type` comes after it (JSON keys have no
 * order); should the type then not be `text`, the output is taken back to the block's start.
 */
class TextRenderer implements JsonEvents {
  /** Containers open: the result's object is 1, `content` 2, a block 3. */
  private depth = 0;
  private blocks = 0;
  private blockOpen = false;
  private blockStart = 0;
  private type: string[] | undefined;
  private blockType: string | undefined;
  private text: 'none' | 'writing' | 'skipped' | 'string' | 'other' = 'none';
  private lastChar = '';
  /** While inside `structuredContent` (an object: {@link ShapeCheck} makes sure): its layout, into a spool file. */
  private structured: JsonPrinter | undefined;
  private structuredSeen = false;

  constructor(
    private readonly out: FileOutput,
    private readonly spool: () => TextOut,
  ) {}

  startObject(path: JsonPath): void {
    if (!this.structured && path.length === 1 && path[0] === 'structuredContent' && this.blocks === 0) {
      // Kept aside until the end: it is written only when the result has no content blocks.
      this.structured = new JsonPrinter(this.spool());
      this.structuredSeen = true;
    }
    this.depth += 1;
    if (this.structured) return this.structured.startObject();
    if (isBlock(path)) {
      if (this.blocks > 0) this.emit('\n');
      this.blocks += 1;
      this.blockOpen = true;
      this.blockStart = this.out.position;
      this.blockType = undefined;
      this.text = 'none';
    } else if (isBlockText(path)) this.text = 'other';
  }
  startArray(path: JsonPath): void {
    this.depth += 1;
    if (this.structured) return this.structured.startArray();
    if (isBlockText(path)) this.text = 'other';
  }
  endObject(): void {
    this.depth -= 1;
    if (this.structured) {
      this.structured.endObject();
      if (this.depth === 1) this.structured = undefined;
    } else if (this.blockOpen && this.depth === 2) this.endBlock();
  }
  endArray(): void {
    this.depth -= 1;
    this.structured?.endArray();
  }
  key(name: string): void {
    this.structured?.key(name);
  }
  stringStart(path: JsonPath): void {
    if (this.structured) return this.structured.stringStart();
    if (isBlockType(path)) this.type = [];
    else if (isBlockText(path)) this.text = this.blockType === undefined || this.blockType === 'text' ? 'writing' : 'skipped';
  }
  stringChunk(text: string): void {
    if (this.structured) this.structured.stringChunk(text);
    else if (this.type) this.type.push(text);
    else if (this.text === 'writing') this.emit(text);
  }
  stringEnd(): void {
    if (this.structured) return this.structured.stringEnd();
    if (this.type) {
      this.blockType = this.type.join('');
      this.type = undefined;
    } else if (this.text === 'writing' || this.text === 'skipped') this.text = 'string';
  }
  primitive(raw: string, path: JsonPath): void {
    if (this.structured) return this.structured.primitive(raw);
    if (isBlockText(path)) this.text = 'other';
  }

  /** The whole result went past: its structured content when it had no blocks, and a final newline. */
  async finish(copySpool: () => Promise<string>): Promise<void> {
    if (this.blocks === 0 && this.structuredSeen) this.lastChar = await copySpool();
    if (this.lastChar !== '' && this.lastChar !== '\n') this.emit('\n');
  }

  /** A block ended: keep its text, or take back what was written of it and name the block. */
  private endBlock(): void {
    this.blockOpen = false;
    if (this.blockType === 'text' && this.text === 'string') return;
    if (this.out.position > this.blockStart) this.out.rewind(this.blockStart);
    this.emit(`[${this.blockType ?? 'undefined'} content omitted; use --json]`);
  }

  private emit(text: string): void {
    if (text.length === 0) return;
    this.out.write(text);
    this.lastChar = text[text.length - 1] as string;
  }
}

function isBlock(path: JsonPath): boolean {
  return path.length === 2 && path[0] === 'content';
}
function isBlockType(path: JsonPath): boolean {
  return path.length === 3 && path[0] === 'content' && path[2] === 'type';
}
function isBlockText(path: JsonPath): boolean {
  return path.length === 3 && path[0] === 'content' && path[2] === 'text';
}

/** Each event to every consumer, in order (the shape check first, so a wrong shape stops before it is written). */
function tee(...consumers: JsonEvents[]): JsonEvents {
  return {
    startObject: (path) => consumers.forEach((consumer) => consumer.startObject(path)),
    endObject: () => consumers.forEach((consumer) => consumer.endObject()),
    startArray: (path) => consumers.forEach((consumer) => consumer.startArray(path)),
    endArray: () => consumers.forEach((consumer) => consumer.endArray()),
    key: (name, path) => consumers.forEach((consumer) => consumer.key(name, path)),
    stringStart: (path) => consumers.forEach((consumer) => consumer.stringStart(path)),
    stringChunk: (text) => consumers.forEach((consumer) => consumer.stringChunk(text)),
    stringEnd: () => consumers.forEach((consumer) => consumer.stringEnd()),
    primitive: (raw, path) => consumers.forEach((consumer) => consumer.primitive(raw, path)),
  };
}

/** Bytes of the spool read back at a time. */
const COPY_BYTES = 64 * 1024;

/** What `--output` writes: the text (`resultText` and a final newline), or with `json` the `--json` document. */
export interface OutputShape {
  json: boolean;
  /** Named in the `--json` document when the result is a task's. */
  taskId?: string;
}

/**
 * Read the large result behind `uri` (a bounded result's link) and write it to `path` as `shape` says, holding a
 * piece of it at a time: the file appears only once complete (see {@link writeFileAtomically}).
 * @returns the bytes written.
 * @throws TaskNotFoundError / TasksProtocolError / TasksConnectionError as `readResultResourceTo` throws them;
 *   TasksProtocolError (`code` null) when the resource is not a tool result; file system errors.
 */
export async function saveLargeResult(client: TasksClient, uri: string, path: string, shape: OutputShape): Promise<number> {
  // Structured content is written only for a result without content blocks, known at its end: kept aside in a file
  // beside the output until then (text mode only).
  const spoolPath = join(dirname(resolve(path)), `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.structured`);
  const spoolFile = shape.json ? undefined : await open(spoolPath, 'wx+');
  try {
    return await writeFileAtomically(path, async (file) => {
      const out = new FileOutput(file);
      const spool = spoolFile && new FileOutput(spoolFile);
      const check = new ShapeCheck();
      let render: JsonEvents;
      let finish: () => Promise<void>;
      if (spool && spoolFile) {
        const text = new TextRenderer(out, () => spool);
        render = text;
        finish = () => text.finish(() => copyInto(out, spool, spoolFile));
      } else {
        out.write(`{\n${shape.taskId === undefined ? '' : `  "taskId": ${JSON.stringify(shape.taskId)},\n`}  "status": "completed",\n  "result": `);
        render = new JsonPrinter(out, 1, 'resultType');
        finish = async () => out.write('\n}\n');
      }
      const tokenizer = new JsonTokenizer(tee(check, render));
      const decoder = new StringDecoder('utf8');
      const settle = async (): Promise<void> => {
        await spool?.flush();
        await out.flush();
      };
      const sink = new Writable({
        write(chunk: Buffer, _encoding, callback) {
          try {
            tokenizer.write(decoder.write(chunk));
          } catch (error) {
            return callback(error as Error);
          }
          settle().then(() => callback(), callback);
        },
        final(callback) {
          try {
            tokenizer.write(decoder.end());
            tokenizer.end();
            check.finish();
          } catch (error) {
            return callback(error as Error);
          }
          settle()
            .then(finish)
            .then(() => out.flush())
            .then(() => callback(), callback);
        },
      });
      let failed: Error | undefined;
      sink.on('error', (error) => (failed ??= error));
      await client.readResultResourceTo(uri, sink);
      await new Promise<void>((resolveEnd) => sink.end(() => resolveEnd()));
      if (failed) throw failed;
      return out.position;
    });
  } catch (error) {
    if (error instanceof JsonStreamError)
      throw new TasksProtocolError(`resources/read ${uri}: the resource is not a tool result (${error.message})`, null, undefined, { cause: error });
    throw error;
  } finally {
    if (spoolFile) {
      await spoolFile.close().catch(() => {});
      await unlink(spoolPath).catch(() => {});
    }
  }
}

/** Append the spool's text to `out`, a piece at a time; returns its last character ('' when empty). */
async function copyInto(out: FileOutput, spool: FileOutput, file: FileHandle): Promise<string> {
  await spool.flush();
  const decoder = new StringDecoder('utf8');
  const buffer = Buffer.alloc(COPY_BYTES);
  let last = '';
  for (let position = 0; position < spool.position;) {
    const { bytesRead } = await file.read(buffer, 0, COPY_BYTES, position);
    if (bytesRead === 0) break;
    position += bytesRead;
    const text = decoder.write(buffer.subarray(0, bytesRead));
    out.write(text);
    if (text.length > 0) last = text[text.length - 1] as string;
    await out.flush();
  }
  const rest = decoder.end();
  out.write(rest);
  return rest.length > 0 ? (rest[rest.length - 1] as string) : last;
}
