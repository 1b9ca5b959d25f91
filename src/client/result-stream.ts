import { AsyncLocalStorage } from 'node:async_hooks';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { StringDecoder } from 'node:string_decoder';

import type { FetchLike } from '@modelcontextprotocol/client';

import { type JsonEvents, type JsonPath, JsonTokenizer } from './json-stream.js';

/**
 * Where the `text` of one `resources/read` answer goes instead of into the answer: `text` gets it piece by piece
 * (escapes decoded, never ending inside a surrogate pair), `drain` is awaited after each piece of the HTTP body, so
 * a slow destination slows the read instead of piling text up in memory.
 */
export interface TextDiversion {
  /** The resource whose read is diverted. */
  uri: string;
  text(piece: string): void;
  drain(): Promise<void>;
  /** Set once an answer's `text` was diverted (the answer the SDK then sees has `text: ""`). */
  diverted: boolean;
}

const diversions = new AsyncLocalStorage<TextDiversion>();

/** Run `read` with `diversion` in force for every fetch it makes (as request-deadline.ts carries a deadline). */
export function withTextDiversion<T>(diversion: TextDiversion, read: () => Promise<T>): Promise<T> {
  return diversions.run(diversion, read);
}

/**
 * `inner`, except for the `resources/read` of a diversion's URI (see {@link withTextDiversion}): its answer's body is
 * read as it arrives — a JSON body or SSE events (a 2025-11-25 session) — and `result.contents[0].text` goes to the
 * diversion; the SDK gets the same answer with that text empty. The server's HTTP fast path streams a whole result
 * in one answer (tens of MiB); the SDK would hold it as one string and its parsed copy, several times its size.
 * Every other request, and an answer that is not a 200 with a JSON or SSE body, passes through untouched.
 */
export function divertingFetch(inner: FetchLike, direct: boolean): FetchLike {
  return async (url, init) => {
    const diversion = diversions.getStore();
    if (diversion === undefined || !readsResource(init?.body, diversion.uri)) return inner(url, init);
    const answer = direct ? await sendDirect(url, init) : await sendThrough(inner, url, init);
    const type = answer.headers.get('content-type') ?? '';
    const sse = type.includes('text/event-stream');
    if (answer.status !== 200 || !(sse || type.includes('application/json'))) {
      // An HTTP error (401, 404, …): small; the SDK reads it as it reads any.
      const chunks: Buffer[] = [];
      for await (const bytes of answer.body) chunks.push(Buffer.from(bytes));
      return new Response(answer.status === 204 || answer.status === 304 ? null : Buffer.concat(chunks), answer);
    }
    const decoder = new StringDecoder('utf8');
    const reader = sse ? new SseReader(diversion) : new MessageReader(diversion);
    for await (const bytes of answer.body) {
      reader.write(decoder.write(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)));
      await diversion.drain();
    }
    reader.write(decoder.end());
    answer.headers.delete('content-length');
    answer.headers.delete('content-encoding');
    return new Response(reader.end(), answer);
  };
}

/** An HTTP answer whose body is read as it comes. */
interface StreamedAnswer {
  status: number;
  statusText: string;
  headers: Headers;
  body: AsyncIterable<Uint8Array>;
}

async function sendThrough(inner: FetchLike, url: string | URL, init: RequestInit | undefined): Promise<StreamedAnswer> {
  const response = await inner(url, init);
  const body = (response.body ?? (async function* () {})()) as AsyncIterable<Uint8Array>;
  return { status: response.status, statusText: response.statusText, headers: new Headers(response.headers), body };
}

/**
 * The request sent with `node:http(s)` rather than `fetch`: a body read slower than it arrives (written to a file
 * as it is) must hold the socket back. Node's `fetch` (undici) keeps reading the socket into its own buffer
 * instead — measured: 60 MiB saved this way peaked at 270 MB and ran 10× longer, the buffer growing and being
 * sliced. A connection failure is thrown as `fetch` throws it (`TypeError: fetch failed`, its cause), so it is
 * reported alike.
 */
function sendDirect(url: string | URL, init: RequestInit | undefined): Promise<StreamedAnswer> {
  const target = new URL(url);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const headers = Object.fromEntries(new Headers(init?.headers).entries());
  return new Promise((resolve, reject) => {
    const request = send(target, { method: init?.method ?? 'POST', headers, ...(init?.signal ? { signal: init.signal } : {}) }, (message) => {
      const answerHeaders = new Headers();
      for (const [name, value] of Object.entries(message.headers)) {
        for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) answerHeaders.append(name, one);
      }
      resolve({ status: message.statusCode ?? 0, statusText: message.statusMessage ?? '', headers: answerHeaders, body: message });
    });
    request.on('error', (error) => reject(error.name === 'AbortError' ? error : new TypeError('fetch failed', { cause: error })));
    request.end(typeof init?.body === 'string' ? init.body : undefined);
  });
}

/** Whether a request body is the JSON-RPC `resources/read` of `uri`. */
function readsResource(body: unknown, uri: string): boolean {
  if (typeof body !== 'string') return false;
  try {
    const message = JSON.parse(body) as { method?: unknown; params?: { uri?: unknown } };
    return message.method === 'resources/read' && message.params?.uri === uri;
  } catch {
    return false;
  }
}

/** The diverted string's place in a JSON-RPC answer. */
function isDivertedText(path: JsonPath): boolean {
  return path.length === 4 && path[0] === 'result' && path[1] === 'contents' && path[2] === 0 && path[3] === 'text';
}

/** One JSON message read as it arrives and built again without the diverted text (which is small then). */
class MessageReader {
  private readonly builder: ValueBuilder;
  private readonly tokenizer: JsonTokenizer;

  constructor(diversion: TextDiversion) {
    this.builder = new ValueBuilder(diversion);
    this.tokenizer = new JsonTokenizer(this.builder);
  }

  write(text: string): void {
    this.tokenizer.write(text);
  }

  /** The message as JSON text. @throws JsonStreamError when it is not JSON. */
  end(): string {
    this.tokenizer.end();
    return JSON.stringify(this.builder.value);
  }
}

/**
 * An SSE stream read as it arrives: each event's `data` lines go to a {@link MessageReader} as they come (a data
 * line may be the whole large result), other lines are kept; the events are written again with their data rebuilt.
 */
class SseReader {
  private out = '';
  private line = '';
  /** The message of the event being read, from its first data line. */
  private message: MessageReader | undefined;
  /** Reading a data line's value (after `data:` and its optional space). */
  private inData = false;
  private dataStarted = false;

  constructor(private readonly diversion: TextDiversion) {}

  write(text: string): void {
    let i = 0;
    while (i < text.length) {
      const newline = text.indexOf('\n', i);
      const end = newline === -1 ? text.length : newline;
      if (this.inData) {
        const part = text.slice(i, end);
        (this.message as MessageReader).write(newline !== -1 && part.endsWith('\r') ? part.slice(0, -1) : part);
      } else {
        this.line += text.slice(i, end);
        if (this.line.startsWith('data:') && (this.line.length > 5 || newline === -1)) this.startData();
      }
      if (newline === -1) return;
      this.endLine();
      i = newline + 1;
    }
  }

  /** The events, rebuilt. */
  end(): string {
    if (this.inData || this.line.length > 0) this.endLine();
    if (this.message) this.endEvent();
    return this.out;
  }

  private startData(): void {
    const value = this.line.slice(5);
    if (value.length === 0) return; // wait for the next piece: a space there is not data
    this.line = '';
    this.inData = true;
    if (this.message)
      this.message.write('\n'); // between data lines of one event, as the spec joins them
    else this.message = new MessageReader(this.diversion);
    this.message.write(value.startsWith(' ') ? value.slice(1) : value);
    this.dataStarted = true;
  }

  private endLine(): void {
    if (this.inData) {
      this.inData = false;
      return;
    }
    const line = this.line.endsWith('\r') ? this.line.slice(0, -1) : this.line;
    this.line = '';
    if (line === 'data:') {
      // An empty data line still counts as one.
      this.message ??= new MessageReader(this.diversion);
      this.dataStarted = true;
    } else if (line === '') {
      if (this.message) this.endEvent();
      this.out += '\n';
    } else this.out += `${line}\n`;
  }

  private endEvent(): void {
    if (this.dataStarted && this.message) this.out += `data: ${this.message.end()}\n`;
    this.message = undefined;
    this.dataStarted = false;
  }
}

/** Builds the value of a JSON text from its events, sending the diverted string to the diversion instead. */
class ValueBuilder implements JsonEvents {
  value: unknown;
  private readonly stack: Array<{ container: Record<string, unknown> | unknown[]; key: string }> = [];
  private string: string[] | undefined;
  private diverting = false;

  constructor(private readonly diversion: TextDiversion) {}

  startObject(): void {
    this.stack.push({ container: {}, key: '' });
  }
  startArray(): void {
    this.stack.push({ container: [], key: '' });
  }
  endObject(): void {
    this.place((this.stack.pop() as { container: unknown }).container);
  }
  endArray(): void {
    this.endObject();
  }
  key(name: string): void {
    (this.stack[this.stack.length - 1] as { key: string }).key = name;
  }
  stringStart(path: JsonPath): void {
    this.diverting = isDivertedText(path);
    if (this.diverting) this.diversion.diverted = true;
    this.string = [];
  }
  stringChunk(text: string): void {
    if (this.diverting) this.diversion.text(text);
    else this.string?.push(text);
  }
  stringEnd(): void {
    this.place(this.diverting ? '' : (this.string ?? []).join(''));
    this.string = undefined;
    this.diverting = false;
  }
  primitive(raw: string): void {
    this.place(JSON.parse(raw));
  }

  private place(value: unknown): void {
    const top = this.stack[this.stack.length - 1];
    if (!top) this.value = value;
    else if (Array.isArray(top.container)) top.container.push(value);
    // defineProperty: a "__proto__" key is data, as JSON.parse makes it.
    else Object.defineProperty(top.container, top.key, { value, enumerable: true, writable: true, configurable: true });
  }
}
