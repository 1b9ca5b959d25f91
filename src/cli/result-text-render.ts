/**
 * The text `--output` writes for a large result without `--json`, rendered from its JSON tokens as they stream past:
 * what `resultText` makes of the whole result, never held whole.
 */
import type { JsonEvents, JsonPath } from '../client/json-tokens.js';
import { JsonPrinter } from './json-layout.js';
import type { FileOutput, TextOut } from './rewindable-output.js';

/**
 * The text `--output` writes without `--json`, as the result streams past — what `resultText` makes of the whole
 * result, plus a final newline: each content block's `text` for a `text` block, `[<type> content omitted; use
 * --json]` for any other, one newline between them; for a result without content blocks its `structuredContent`
 * laid out as JSON — its keys in the server's order, where `resultText` has `JSON.parse`'s (see {@link JsonPrinter}).
 * A block's text is written as it arrives even when its `type` comes after it (JSON keys have no order); should the
 * type then not be `text`, the output is taken back to the block's start.
 */
export class TextRenderer implements JsonEvents {
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
    private readonly spool: TextOut,
  ) {}

  startObject(path: JsonPath): void {
    if (!this.structured && path.length === 1 && path[0] === 'structuredContent' && this.blocks === 0) {
      // Kept aside until the end: it is written only when the result has no content blocks.
      this.structured = new JsonPrinter(this.spool);
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
  async finish(spool: FileOutput): Promise<void> {
    if (this.blocks === 0 && this.structuredSeen) this.lastChar = await this.out.append(spool);
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
