/**
 * `call|watch|resume --output FILE` for a large result: read back from the server chunk by chunk
 * (`TasksClient.readResultResourceTo`, its chunk resources) and rendered as it arrives — its text blocks, or with
 * `--json` the `{taskId, status, result}` document — into a file that replaces FILE only once complete, holding a few
 * chunks at a time whatever the result's size.
 */
import { unlink } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

import { destinationOf, openScratch, releaseScratch, scratchPathFor, writeOutputFile } from '../client/file-destination.js';
import { type TasksClient, TasksProtocolError } from '../client/index.js';
import { type JsonEvents, JsonStreamError, JsonTokenizer } from '../client/json-tokens.js';
import { JsonPrinter } from './json-layout.js';
import { ShapeCheck } from './result-shape-check.js';
import { TextRenderer } from './result-text-render.js';
import { FileOutput } from './rewindable-output.js';
import { onTerminal } from './terminal-text.js';

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

/** What `--output` writes: the text (`resultText` and a final newline), or with `json` the `--json` document. */
export interface OutputShape {
  json: boolean;
  /** Named in the `--json` document when the result is a task's. */
  taskId?: string;
}

/** How the result is read: its size (the link's `size`, checked against the chunks) and an abort signal (Ctrl-C). */
export interface SaveOptions {
  bytes?: number;
  signal?: AbortSignal;
}

/**
 * Read the large result behind `uri` (a bounded result's link) and write it to `path` as `shape` says, holding a
 * few chunks of it at a time: the file appears only once complete (see {@link writeOutputFile}); a read that
 * fails or is aborted leaves nothing behind.
 * @returns the bytes written.
 * @throws TaskNotFoundError / TasksProtocolError / TasksConnectionError as `readResultResourceTo` throws them, and
 *   the signal's abort error; TasksProtocolError (`code` null) when the resource is not a tool result; file system
 *   errors.
 */
export async function saveLargeResult(client: TasksClient, uri: string, path: string, shape: OutputShape, options: SaveOptions = {}): Promise<number> {
  // Structured content is written only for a result without content blocks, known at its end: kept aside in a file
  // beside the output until then (text mode only).
  const spoolPath = scratchPathFor(await destinationOf(path), 'structured');
  const spoolFile = shape.json ? undefined : await openScratch(spoolPath, 'wx+', 0o600);
  try {
    return await writeOutputFile(
      path,
      async (file) => {
        const out = new FileOutput(file);
        const spool = spoolFile && new FileOutput(spoolFile);
        const check = new ShapeCheck();
        let render: JsonEvents;
        let finish: () => Promise<void>;
        if (spool) {
          const text = new TextRenderer(out, spool);
          render = text;
          finish = () => text.finish(spool);
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
        await client.readResultResourceTo(uri, sink, options);
        await new Promise<void>((resolveEnd) => sink.end(() => resolveEnd()));
        if (failed) throw failed;
        return out.position;
      },
      { ...(options.signal ? { signal: options.signal } : {}), terminal: onTerminal(shape.json) },
    );
  } catch (error) {
    if (error instanceof JsonStreamError)
      throw new TasksProtocolError(`resources/read ${uri}: the resource is not a tool result (${error.message})`, null, undefined, { cause: error });
    throw error;
  } finally {
    if (spoolFile) {
      await spoolFile.close().catch(() => {});
      await unlink(spoolPath).catch(() => {});
      releaseScratch(spoolPath);
    }
  }
}
