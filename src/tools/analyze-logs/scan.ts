/**
 * The work of `analyze_logs`: list the log files of a tree, stream every line once, count severities per file
 * and per hour, and mine message templates. Memory is bounded by the caps below, not by the input size. Secrets
 * are redacted from everything the report echoes: lines before they are mined, and paths (a file can be named
 * after a key). Binary content is never mined, whatever the names and globs that selected the file: a file that
 * is binary from its first chunk is skipped, one that turns binary later is read up to there.
 */
import { BinaryContentError, forEachLine } from '../lines.js';
import { redactSecrets, SecretRedactor } from '../../core/redaction.js';
import type { Confinement } from '../roots.js';
import { walkFiles } from '../walk.js';
import { countLine, emptyBucket, HourlyCounts, type BucketCounts, type SeverityCounts } from './counts.js';
import { isGzip, logFileSelector } from './files.js';
import { LineParser } from './line.js';
import { TemplateMiner, templateText } from './miner.js';

/** Options of {@link scanLogs}. */
export interface ScanOptions {
  /** Real path of a file or directory inside the roots. */
  target: string;
  /** The allowed roots and the denied paths; every file is opened through it. */
  confinement: Confinement;
  /** Epoch ms; lines stamped earlier are skipped, or `null`. */
  since: number | null;
  /** Templates to report, most frequent first. */
  top: number;
  /** Extra glob of files to scan, or `null`. */
  include: string | null;
  signal: AbortSignal;
  /** Called with files done and files in total, once before the first file and after each file. */
  onProgress(done: number, total: number): void;
  /** Reference time (epoch ms) for timestamps without a year. Default: now. */
  now?: number;
}

/** One file's counts. */
export type FileReport = BucketCounts & {
  /** Relative to the scanned directory, `/`-separated. */
  path: string;
};

/** One mined template. */
export type TemplateReport = {
  /** Message template, `<*>` at variable positions, secrets redacted. */
  template: string;
  /** Lines it covers. */
  count: number;
  /** The first line it covered, capped and with secrets redacted. */
  example: string;
};

/** The scan's result (the tool's `structuredContent`). */
/** A type alias rather than an interface so that it is assignable to `JsonObject`. */
export type LogScanReport = {
  path: string;
  /** Log files read to the end. */
  files: number;
  /** Non-blank lines counted (those skipped by `since` excluded; lines read before a file failed included). */
  lines: number;
  /** Lines skipped because they are older than `since`. */
  linesBeforeSince: number;
  /** Files not read: not log files by name, binary (see `binaryFiles`), or unreadable (see `failedFiles`). */
  skippedFiles: number;
  /** Selected files (by name or `include`) that are binary from their first chunk; not read, not in `perFile`. */
  binaryFiles: number;
  /** Symlinks skipped because their target escapes the roots. */
  escapedSymlinks: number;
  /** Whether the file list hit its cap and later files were ignored. */
  truncated: boolean;
  severities: SeverityCounts;
  /** Per file in path order; at most {@link MAX_FILE_REPORTS}. */
  perFile: FileReport[];
  perFileTruncated: boolean;
  /** Per UTC hour `YYYY-MM-DDTHH:00Z`, plus `unknown` (no timestamp) and `other` (beyond the hour cap). */
  perHour: Record<string, BucketCounts>;
  /** Distinct templates kept at the end of the scan. */
  templateCount: number;
  /** Rare templates dropped to stay within the template cap. */
  evictedTemplates: number;
  templates: TemplateReport[];
  /**
   * Files that could not be read to the end (first {@link MAX_FAILURES}): unreadable, corrupt, or turning binary
   * part-way (lines before that point are counted).
   */
  failedFiles: { path: string; error: string }[];
};

/** Caps that bound memory and result size. */
export const MAX_FILES = 100_000;
export const MAX_FILE_REPORTS = 1000;
export const MAX_HOURS = 2500;
export const MAX_TEMPLATES = 10_000;
export const MAX_FAILURES = 50;
/** Characters kept of an example line. */
const MAX_EXAMPLE_LENGTH = 500;
/** Characters kept of a rendered template (at most 128 tokens are mined, but tokens can be long). */
const MAX_TEMPLATE_LENGTH = 1000;
const NON_BLANK = /\S/;

/**
 * Scans `options.target`; see the module comment.
 *
 * @throws the signal's reason when aborted.
 */
export async function scanLogs(options: ScanOptions): Promise<LogScanReport> {
  const { signal } = options;
  const walk = await walkFiles(options.target, { confinement: options.confinement, signal, maxFiles: MAX_FILES });
  const selected = logFileSelector(options.include);
  const logFiles = walk.files.filter((file) => selected(file.relative));
  const now = options.now ?? Date.now();
  const total = emptyBucket();
  const hourly = new HourlyCounts(MAX_HOURS);
  const miner = new TemplateMiner({ maxClusters: MAX_TEMPLATES, maxExampleLength: MAX_EXAMPLE_LENGTH });
  const perFile: FileReport[] = [];
  const failedFiles: LogScanReport['failedFiles'] = [];
  let failures = 0;
  let binaryFiles = 0;
  let linesBeforeSince = 0;

  options.onProgress(0, logFiles.length);
  for (const [index, file] of logFiles.entries()) {
    signal.throwIfAborted();
    const relative = redactSecrets(file.relative);
    const counts: FileReport = { path: relative, ...emptyBucket() };
    const parser = new LineParser(now);
    const redactor = new SecretRedactor();
    // Lines without a timestamp (stack frames, continuations) follow the last timestamped line for `since`.
    let keep = true;
    try {
      await forEachLine(
        await options.confinement.openForReading(file.path),
        (line) => {
          if (!NON_BLANK.test(line)) return;
          // Redacting before mining keeps secrets out of templates as well as examples.
          const clean = redactor.redact(line);
          const parsed = parser.parse(clean);
          if (options.since !== null) {
            if (parsed.epochMs !== null) keep = parsed.epochMs >= options.since;
            if (!keep) {
              linesBeforeSince++;
              return;
            }
          }
          countLine(counts, parsed.severity);
          countLine(total, parsed.severity);
          hourly.add(parsed.epochMs, parsed.severity);
          miner.add(parsed.message, clean);
        },
        { signal, gzip: isGzip(file.relative), rejectBinary: true },
      );
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      if (error instanceof BinaryContentError && error.byteOffset === 0) {
        binaryFiles++;
        options.onProgress(index + 1, logFiles.length);
        continue;
      }
      failures++;
      if (failedFiles.length < MAX_FAILURES) failedFiles.push({ path: relative, error: redactSecrets(describe(error)) });
    }
    if (perFile.length < MAX_FILE_REPORTS) perFile.push(counts);
    options.onProgress(index + 1, logFiles.length);
  }

  const clusters = miner.clusters().sort((a, b) => b.count - a.count || a.id - b.id);
  return {
    path: redactSecrets(options.target),
    files: logFiles.length - failures - binaryFiles,
    lines: total.lines,
    linesBeforeSince,
    skippedFiles: walk.files.length - logFiles.length + failures + binaryFiles,
    binaryFiles,
    escapedSymlinks: walk.escapedSymlinks,
    truncated: walk.truncated,
    severities: total.severities,
    perFile,
    perFileTruncated: logFiles.length - binaryFiles > perFile.length,
    perHour: hourly.toJSON(),
    templateCount: clusters.length,
    evictedTemplates: miner.evicted,
    templates: clusters.slice(0, options.top).map((cluster) => ({
      template: cap(templateText(cluster), MAX_TEMPLATE_LENGTH),
      count: cluster.count,
      example: cluster.example,
    })),
    failedFiles,
  };
}

function cap(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length)}…` : text;
}

/** An error's code and message without a stack (paths in it are inside the roots). */
function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
