import { readdir } from 'node:fs/promises';
import { resolve } from 'node:path';

import { writeDemoCorpus } from '../tools/index.js';
import { UsageError } from './usage-error.js';

/** Options of `mcp-tasks demo-corpus`, as commander parses them. */
export interface DemoCorpusFlags {
  out: string;
  files: number;
  lines: number;
  seed: number;
  gzipRatio: number;
}

/** `mcp-tasks demo-corpus`: write a synthetic tree of plain and gzipped logs and print what was written. */
export async function demoCorpusCommand(flags: DemoCorpusFlags): Promise<void> {
  if (flags.files < 1 || flags.lines < 1) throw new UsageError('--files and --lines must be at least 1');
  if (!(flags.gzipRatio >= 0 && flags.gzipRatio <= 1)) throw new UsageError('--gzip-ratio must be between 0 and 1');
  const out = resolve(flags.out);
  // Same seed, same bytes: a second run rewrites its files in place, but files it did not write stay and are scanned
  // too (a newcomer's /tmp/corpus from an earlier, larger run made the tour's counts differ without a word).
  const present = await readdir(out).catch(() => []);
  if (present.length > 0)
    process.stderr.write(`demo-corpus: ${out} is not empty (${present.length} entries): its files of the same names are rewritten, the others are kept\n`);
  const started = Date.now();
  const summary = await writeDemoCorpus({ out, files: flags.files, lines: flags.lines, seed: flags.seed, gzipRatio: flags.gzipRatio });
  const megabytes = (summary.bytes / 1024 / 1024).toFixed(1);
  process.stdout.write(`${out}: ${summary.files} log files, ${summary.lines} lines, ${megabytes} MiB in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}
