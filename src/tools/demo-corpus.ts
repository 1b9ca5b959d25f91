/**
 * Writes a large synthetic log tree for demonstrations and tests of `analyze_logs`: hosts × systems × rotations
 * (`host-03/nginx/access.log.2.gz`), plain and gzip files, timestamps spread over hours, and a few non-log files
 * (CSV, README) that a scan must skip. The same seed always gives the same bytes.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { constants, createGzip } from 'node:zlib';

import { deriveSeed, Random } from './demo-corpus/random.js';
import { type LogStyle, STYLES } from './demo-corpus/styles.js';

/** Options of {@link writeDemoCorpus}. */
export interface DemoCorpusOptions {
  /** Output directory (created if missing; existing files with the same names are overwritten). */
  out: string;
  /** Number of log files. */
  files: number;
  /** Lines per log file (a stack trace is never cut, so a file may end up to 4 lines longer). */
  lines: number;
  /** Share (0..1) of log files written gzip-compressed. Default 0.3. */
  gzipRatio?: number;
  /** Seed of the generator. Default 1. */
  seed?: number;
}

/** What {@link writeDemoCorpus} wrote. */
export interface DemoCorpusSummary {
  /** Log files written (the non-log files are not counted). */
  files: number;
  /** Log lines written. */
  lines: number;
  /** Bytes written to disk, all files included. */
  bytes: number;
}

/** Time the newest file ends at; fixed so that the corpus is reproducible. */
const END_MS = Date.UTC(2024, 2, 1, 0, 0, 0);
/** Each file covers this many hours; rotation N ends N windows earlier. */
const WINDOW_HOURS = 6;
/** The last hours of the newest files hold an incident (see `LogStyle.incident`). */
const INCIDENT_HOURS = 2;
/** Rotations per host and system before a new host is used. */
const ROTATIONS = 4;
/** Files written at once: gzip runs on the thread pool, so a few in flight keep the main thread generating. */
const CONCURRENCY = 4;
/** Lines per write. */
const BATCH_LINES = 2000;

/**
 * Writes the corpus; see the module comment.
 *
 * @returns counts of what was written.
 * @throws file-system errors; a `RangeError` for a negative or non-integer count or a ratio outside 0..1.
 */
export async function writeDemoCorpus(options: DemoCorpusOptions): Promise<DemoCorpusSummary> {
  const { files, lines } = options;
  const gzipRatio = options.gzipRatio ?? 0.3;
  const seed = options.seed ?? 1;
  if (!Number.isInteger(files) || files < 0 || !Number.isInteger(lines) || lines < 0) {
    throw new RangeError('files and lines must be non-negative integers');
  }
  if (!(gzipRatio >= 0 && gzipRatio <= 1)) throw new RangeError('gzipRatio must be between 0 and 1');

  await mkdir(options.out, { recursive: true });
  const summary: DemoCorpusSummary = { files: 0, lines: 0, bytes: 0 };
  const hosts = Math.max(1, Math.ceil(files / (STYLES.length * ROTATIONS)));
  let next = 0;
  const worker = async () => {
    while (next < files) {
      const index = next++;
      const written = await writeLogFile(options.out, index, hosts, lines, gzipRatio, seed);
      summary.files++;
      summary.lines += written.lines;
      summary.bytes += written.bytes;
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, files) }, worker));
  summary.bytes += await writeNonLogFiles(options.out, Math.min(hosts, files), seed);
  return summary;
}

async function writeLogFile(
  out: string,
  index: number,
  hosts: number,
  lines: number,
  gzipRatio: number,
  seed: number,
): Promise<{ lines: number; bytes: number }> {
  const random = new Random(deriveSeed(seed, index));
  const style = STYLES[index % STYLES.length] as LogStyle;
  const hostIndex = Math.floor(index / STYLES.length) % hosts;
  const rotation = Math.floor(index / (STYLES.length * hosts));
  const host = `host-${String(hostIndex).padStart(2, '0')}`;
  const gzip = random.next() < gzipRatio;
  const name = `${style.fileName}${rotation > 0 ? `.${rotation}` : ''}${gzip ? '.gz' : ''}`;
  const directory = path.join(out, host, style.directory);
  await mkdir(directory, { recursive: true });

  const windowEnd = END_MS - rotation * WINDOW_HOURS * 3_600_000;
  const step = (WINDOW_HOURS * 3_600_000) / Math.max(1, lines);
  let written = 0;
  function* batches(): Generator<string> {
    let batch: string[] = [];
    while (written < lines) {
      // Events are spread evenly over the window with jitter, so timestamps only ever move forward.
      const at = Math.floor(windowEnd - WINDOW_HOURS * 3_600_000 + written * step + random.next() * step);
      const incident = rotation === 0 && at >= END_MS - INCIDENT_HOURS * 3_600_000 ? style.incident?.(random, at, host) : null;
      for (const line of incident ?? style.event(random, at, host)) {
        batch.push(line);
        written++;
      }
      if (batch.length >= BATCH_LINES) {
        yield `${batch.join('\n')}\n`;
        batch = [];
      }
    }
    if (batch.length > 0) yield `${batch.join('\n')}\n`;
  }
  let bytes = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length;
      callback(null, chunk);
    },
  });
  const file = path.join(directory, name);
  const sink: Writable = createWriteStream(file);
  if (gzip) await pipeline(Readable.from(batches()), createGzip({ level: constants.Z_BEST_SPEED }), counter, sink);
  else await pipeline(Readable.from(batches()), counter, sink);
  // Modified when its last line was written, as a real (rotated) log: dates without a year are read against it.
  await utimes(file, new Date(windowEnd), new Date(windowEnd));
  return { lines: written, bytes };
}

/** A README at the top and an inventory CSV per host: files a log scan must skip. */
async function writeNonLogFiles(out: string, hosts: number, seed: number): Promise<number> {
  const readme =
    '# Demo log corpus\n\nSynthetic logs written by `mcp-tasks demo-corpus` for trying `analyze_logs`.\n' +
    `Seed ${seed}. Files ending in .csv or .md are not logs and are skipped by the scan.\n`;
  await writeFile(path.join(out, 'README.md'), readme);
  let bytes = Buffer.byteLength(readme);
  const random = new Random(deriveSeed(seed, -1));
  for (let h = 0; h < hosts; h++) {
    const host = `host-${String(h).padStart(2, '0')}`;
    const rows = ['service,port,owner,error_rate'];
    for (const style of STYLES) rows.push(`${style.directory},${random.int(1024, 9999)},team-${random.int(1, 9)},${random.next().toFixed(4)}`);
    const csv = `${rows.join('\n')}\n`;
    await mkdir(path.join(out, host), { recursive: true });
    await writeFile(path.join(out, host, 'inventory.csv'), csv);
    bytes += Buffer.byteLength(csv);
  }
  return bytes;
}
