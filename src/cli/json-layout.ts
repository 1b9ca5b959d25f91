/**
 * JSON laid out again as it streams past, the way `JSON.stringify(value, null, 2)` lays a value out: the `--json`
 * document `--output` writes for a large result, and a result's `structuredContent` in its text.
 */
import type { JsonEvents } from '../client/json-tokens.js';
import type { TextOut } from './rewindable-output.js';

/**
 * JSON events written again as `JSON.stringify(value, null, 2)` lays the value out, nested `depth` levels deep,
 * with one difference: an object's keys keep the order they came in (`JSON.parse` moves integer-like keys first,
 * and zod puts a tool result's known keys first), and a repeated key is written each time (`JSON.parse` keeps its
 * last value) — the same JSON value, never held whole. So a large result saved by `--output` may list keys in
 * another order than the same result printed inline (docs/guides/requestor.md says so): `JSON.parse`'s order would
 * mean holding all of an object's keys before writing its first member, without bound for a wide object.
 * `skipKey` leaves out that key of the top-level object (a 2026-07-28 `resultType`, which the library removes from
 * a result too).
 */
export class JsonPrinter implements JsonEvents {
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
