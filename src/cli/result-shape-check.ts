/**
 * The check that a large result's JSON is a tool result as the library accepts one (`CallToolResultSchema`), made
 * while its tokens stream past, without building it.
 */
import { type JsonEvents, type JsonPath, JsonStreamError } from '../client/json-tokens.js';

/** The result's JSON is not a tool result as the library accepts one (`CallToolResultSchema`). */
export function notAToolResult(what: string): JsonStreamError {
  return new JsonStreamError(`not a tool result: ${what}`);
}

/**
 * Checks the shape `CallToolResultSchema` asks for while the result streams past: an object whose `content` is an
 * array of objects with a string `type`; `structuredContent` and `_meta` objects, `isError` a boolean.
 */
export class ShapeCheck implements JsonEvents {
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
      if (expected !== undefined && expected !== kind) throw notAToolResult(`${String(path[0])} is not ${expected === 'boolean' ? 'a' : 'an'} ${expected}`);
      if (path[0] === 'content') this.content = true;
    } else if (path.length === 2 && path[0] === 'content') {
      if (kind !== 'object') throw notAToolResult(`content block ${String(path[1])} is not an object`);
      this.blocks = Math.max(this.blocks, (path[1] as number) + 1);
    } else if (path.length === 3 && path[0] === 'content' && path[2] === 'type' && kind !== 'string') {
      throw notAToolResult(`content block ${String(path[1])} has a type that is not a string`);
    }
  }
}
