/**
 * The work of `analyze_logs`: list the log files of a tree, stream every line once, group lines into events
 * (a stack trace or traceback is one event), count events per file, per hour and per severity, and mine message
 * templates with their stats. Memory is bounded by the caps below, not by the input size. Secrets, and the
 * personal data the caller asks for, are redacted from everything the report echoes: lines before they are
 * mined, and paths (a file can be named after a key). Binary content is never mined, whatever the names and
 * globs that selected the file: a file that is binary from its first chunk is skipped, one that turns binary
 * later is read up to there.
 *
 * Resumable: the scan journals its progress in parts (through `step`, the task's journal), each holding what it
 * added since the previous one (counts, hours, templates with their stats) and where to go on: the next file,
 * or a byte offset inside a large file with the state of its parser. A re-run after a crash merges the journaled
 * parts back in and continues from the last one; completed files are not opened again.
 */
import { redactSecrets, SecretRedactor } from '../../core/redaction.js';
import type { JsonValue } from '../../core/task.js';
import { BinaryContentError, forEachLine } from '../lines.js';
import { type PiiKind, piiRedactor } from '../pii.js';
import type { Confinement } from '../roots.js';
import { type WalkedFile, walkFiles } from '../walk.js';
import { Pacer } from '../yield.js';
import { addBucket, type BucketCounts, countEvent, emptyBucket, HourlyCounts } from './counts.js';
import { isGzip, logFileSelector } from './files.js';
import { SAMPLE_LINES } from './header.js';
import { FileLineParser, type ParsedLine, type ParserState } from './line.js';
import { type LogCluster, TemplateMiner } from './miner.js';
import { buildReport, type LogScanReport, type ScanTotals } from './report.js';

export type { LogScanReport, TemplateReport } from './report.js';
import { impliedSeverity, type Severity } from './severity.js';
import { countInto, emptyStats, type EventFacts, mergeStats, statsFromJson, statsToJson, type TemplateStats, type TemplateStatsJson } from './stats.js';

/** Options of {@link scanLogs}. */
export interface ScanOptions {
  /** Real path of a file or directory inside the roots. */
  target: string;
  /** The allowed roots and the denied paths; every file is opened through it. */
  confinement: Confinement;
  /** Epoch ms; events stamped earlier are skipped, or `null` (see the tool's description for untimed lines). */
  since: number | null;
  /** Templates to report per list. */
  top: number;
  /** Extra glob of files to scan, or `null`. */
  include: string | null;
  /** Personal data to redact besides secrets. */
  redact: readonly PiiKind[];
  signal: AbortSignal;
  /** Called with files done and files in total: once before the first file (the resumed count) and after each. */
  onProgress(done: number, total: number): void;
  /**
   * Journals a part of the scan once (a task's `ctx.step`): returns the journaled value when there is one, else
   * runs `fn` and journals its value.
   */
  step<T extends JsonValue>(name: string, fn: () => T | Promise<T>): Promise<T>;
  /** Reference time (epoch ms) for year-less dates of files without an mtime. Default: now. */
  now?: number;
  /** A part is journaled after at least this much scanning time (ms; 0: after every file). Default {@link PART_MS}. */
  partMs?: number;
  /** … or after this many bytes read. Default {@link PART_BYTES}. */
  partBytes?: number;
}

/** Caps that bound memory and result size. */
export const MAX_FILES = 100_000;
export const MAX_FILE_REPORTS = 1000;
export const MAX_HOURS = 2500;
export const MAX_TEMPLATES = 10_000;
export const MAX_FAILURES = 50;
/** Lines of one event at most: a longer run of continuation lines starts a new event. */
export const MAX_EVENT_LINES = 1000;
/** Characters kept of an example line. */
const MAX_EXAMPLE_LENGTH = 500;
/** The shortest time between two parts (ms); they grow to a tenth of the scan's time so far, up to {@link MAX_PART_MS}. */
export const PART_MS = 5000;
export const MAX_PART_MS = 5 * 60_000;
export const PART_BYTES = 256 * 1024 * 1024;
/** Bytes a part must hold before it may end inside a file for time's sake. */
export const MIN_MID_FILE_PART_BYTES = 4 * 1024 * 1024;
const NON_BLANK = /\S/;

/** One file's counts. */
export type FileReport = BucketCounts & {
  /** Relative to the scanned directory, `/`-separated, redacted. */
  path: string;
  /** Its header format (`syslog`, `log4j`, `learned`, `none` …). */
  format: string;
};

/** Where a scan goes on. */
type Position = {
  /** Index in the file list, and that file's path (to find it again in a new listing). */
  index: number;
  path: string | null;
  /** Byte offset inside the file (0: from its start). */
  offset: number;
  parser: ParserState | null;
  /** Whether untimed lines are kept by `since` (they follow the last timestamped line). */
  keep: boolean;
};

/** A journaled part of a scan: what it added, and where to go on. */
type ScanPart = {
  kind: 'part';
  totals: ScanTotals;
  files: { path: string; counts: BucketCounts; format: string; done: boolean; status: 'read' | 'binary' | 'failed'; error?: string }[];
  hours: Record<string, BucketCounts>;
  templates: { tokens: string[]; example: string; stats: TemplateStatsJson }[];
  next: Position;
};

/** What a fresh slot of the journal holds once a run has passed it: a restart began there. */
const RESUMED = { kind: 'resumed' } as const;

function emptyTotals(): ScanTotals {
  return { counts: emptyBucket(), linesBeforeSince: 0, eventsBeforeSince: 0, binaryFiles: 0, failures: 0, first: null, last: null };
}

function addTotals(into: ScanTotals, from: ScanTotals): void {
  addBucket(into.counts, from.counts);
  into.linesBeforeSince += from.linesBeforeSince;
  into.eventsBeforeSince += from.eventsBeforeSince;
  into.binaryFiles += from.binaryFiles;
  into.failures += from.failures;
  if (from.first !== null && (into.first === null || from.first < into.first)) into.first = from.first;
  if (from.last !== null && (into.last === null || from.last > into.last)) into.last = from.last;
}

/** An event being read: its first line and how many lines it has so far. */
interface PendingEvent {
  parsed: ParsedLine;
  clean: string;
  lines: number;
}

/** Everything a scan accumulates, and the same kept apart for the part being written. */
class ScanState {
  readonly totals = emptyTotals();
  readonly hourly = new HourlyCounts(MAX_HOURS);
  readonly perFile = new Map<string, FileReport>();
  readonly formats = new Map<string, number>();
  readonly failedFiles: { path: string; error: string }[] = [];
  readonly stats = new Map<number, TemplateStats>();
  readonly implied = new Map<number, Severity | null>();
  readonly miner: TemplateMiner;
  resumedParts = 0;
  /** File ids of this run, by (redacted) path: the same path has one id, also across merged journal parts. */
  private readonly fileIdsByPath = new Map<string, number>();
  private readonly filePaths: string[] = [];
  // The part being written.
  private part = emptyTotals();
  private partFiles = new Map<string, ScanPart['files'][number]>();
  private partHours = new HourlyCounts(MAX_HOURS);
  private partTemplates = new Map<number, TemplateStats>();
  readonly startedAt = performance.now();
  partStartedAt = performance.now();
  partBytes = 0;

  constructor() {
    this.miner = new TemplateMiner({
      maxClusters: MAX_TEMPLATES,
      maxExampleLength: MAX_EXAMPLE_LENGTH,
      onMerge: (from, into) => {
        for (const map of [this.stats, this.partTemplates]) {
          const moved = map.get(from.id);
          if (!moved) continue;
          map.delete(from.id);
          const target = map.get(into.id);
          if (target) mergeStats(target, moved);
          else map.set(into.id, moved);
        }
        this.implied.delete(from.id);
      },
      onEvict: (cluster) => {
        this.stats.delete(cluster.id);
        this.partTemplates.delete(cluster.id);
        this.implied.delete(cluster.id);
      },
    });
  }

  /** The severity a template's words imply, computed once per template. */
  impliedOf(cluster: LogCluster): Severity | null {
    let implied = this.implied.get(cluster.id);
    if (implied === undefined) {
      implied = impliedSeverity(cluster.tokens.join(' '));
      this.implied.set(cluster.id, implied);
    }
    return implied;
  }

  /** This run's id of a file path. */
  fileId(path: string): number {
    let id = this.fileIdsByPath.get(path);
    if (id === undefined) {
      id = this.filePaths.length;
      this.filePaths.push(path);
      this.fileIdsByPath.set(path, id);
    }
    return id;
  }

  statsOf(map: Map<number, TemplateStats>, id: number): TemplateStats {
    let stats = map.get(id);
    if (!stats) {
      stats = emptyStats();
      map.set(id, stats);
    }
    return stats;
  }

  fileReport(path: string, format: string): FileReport {
    let report = this.perFile.get(path);
    if (!report) {
      report = { path, format, ...emptyBucket() };
      if (this.perFile.size < MAX_FILE_REPORTS) this.perFile.set(path, report);
    }
    return report;
  }

  partFile(path: string, format: string): ScanPart['files'][number] {
    let entry = this.partFiles.get(path);
    if (!entry) {
      entry = { path, counts: emptyBucket(), format, done: false, status: 'read' };
      this.partFiles.set(path, entry);
    }
    entry.format = format;
    return entry;
  }

  /** Counts one event everywhere it counts (per event: no objects made here). */
  countEvent(epochMs: number | null, severity: Severity | null, lines: number, file: FileReport): void {
    countTotals(this.totals, epochMs, severity, lines);
    countTotals(this.part, epochMs, severity, lines);
    this.hourly.add(epochMs, severity, lines);
    this.partHours.add(epochMs, severity, lines);
    countEvent(file, severity, lines);
    countEvent(this.partFile(file.path, file.format).counts, severity, lines);
  }

  skipBySince(lines: number): void {
    this.totals.linesBeforeSince += lines;
    this.totals.eventsBeforeSince++;
    this.part.linesBeforeSince += lines;
    this.part.eventsBeforeSince++;
  }

  countTemplate(id: number, event: EventFacts): void {
    countInto(this.statsOf(this.stats, id), event);
    countInto(this.statsOf(this.partTemplates, id), event);
  }

  fileDone(path: string, format: string, status: 'read' | 'binary' | 'failed', error?: string): void {
    if (status === 'read') this.formats.set(format, (this.formats.get(format) ?? 0) + 1);
    if (status === 'binary') {
      this.totals.binaryFiles++;
      this.part.binaryFiles++;
    }
    if (status === 'failed') {
      this.totals.failures++;
      this.part.failures++;
      if (this.failedFiles.length < MAX_FAILURES) this.failedFiles.push({ path, error: error ?? 'unreadable' });
    }
    const entry = this.partFile(path, format);
    entry.done = true;
    entry.status = status;
    if (error !== undefined) entry.error = error;
    if (status === 'binary') this.perFile.delete(path);
  }

  /**
   * Whether the part being written is due: by bytes read, or by scanning time (inside a file only once it read
   * {@link MIN_MID_FILE_PART_BYTES} since the part began, so that small files are never split).
   */
  partDue(partMs: number, partBytes: number, inFile: boolean): boolean {
    if (this.partBytes >= partBytes) return true;
    if (inFile && this.partBytes < MIN_MID_FILE_PART_BYTES) return false;
    const now = performance.now();
    // Parts grow with the scan (a tenth of its time so far), so a long scan writes tens of parts, not thousands,
    // and a crash costs at most about a tenth of the work done.
    const interval = partMs === 0 ? 0 : Math.min(MAX_PART_MS, Math.max(partMs, (now - this.startedAt) / 10));
    return now - this.partStartedAt >= interval;
  }

  /** The part written so far (then a new one starts). */
  takePart(next: Position): ScanPart {
    const templates: ScanPart['templates'] = [];
    const live = new Map(this.miner.clusters().map((cluster) => [cluster.id, cluster]));
    for (const [id, stats] of this.partTemplates) {
      const cluster = live.get(id);
      if (cluster) templates.push({ tokens: [...cluster.tokens], example: cluster.example, stats: statsToJson(stats, (fileId) => this.filePaths[fileId]!) });
    }
    const part: ScanPart = {
      kind: 'part',
      totals: this.part,
      files: [...this.partFiles.values()],
      hours: this.partHours.toJSON(),
      templates,
      next,
    };
    this.part = emptyTotals();
    this.partFiles = new Map();
    this.partHours = new HourlyCounts(MAX_HOURS);
    this.partTemplates = new Map();
    this.partStartedAt = performance.now();
    this.partBytes = 0;
    return part;
  }

  /** Merges a journaled part back in. */
  apply(part: ScanPart): void {
    addTotals(this.totals, part.totals);
    this.hourly.addAll(part.hours);
    for (const file of part.files) {
      if (file.status !== 'binary') addBucket(this.fileReport(file.path, file.format), file.counts);
      if (file.done) {
        if (file.status === 'read') this.formats.set(file.format, (this.formats.get(file.format) ?? 0) + 1);
        if (file.status === 'binary') this.perFile.delete(file.path);
        if (file.status === 'failed' && this.failedFiles.length < MAX_FAILURES) {
          this.failedFiles.push({ path: file.path, error: file.error ?? 'unreadable' });
        }
      }
    }
    for (const template of part.templates) {
      const cluster = this.miner.add(template.tokens.join(' '), template.example, template.stats.events);
      mergeStats(
        this.statsOf(this.stats, cluster.id),
        statsFromJson(template.stats, (path) => this.fileId(path)),
      );
    }
    this.resumedParts++;
  }
}

function countTotals(totals: ScanTotals, epochMs: number | null, severity: Severity | null, lines: number): void {
  countEvent(totals.counts, severity, lines);
  if (epochMs !== null) {
    if (totals.first === null || epochMs < totals.first) totals.first = epochMs;
    if (totals.last === null || epochMs > totals.last) totals.last = epochMs;
  }
}

function isPart(value: JsonValue): value is ScanPart & JsonValue {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && value['kind'] === 'part';
}

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
  const state = new ScanState();
  const redactPii = piiRedactor(options.redact);
  const redactPath = (text: string) => redactPii(redactSecrets(text));

  // Merge the parts a previous run journaled; the first free slot marks where this run starts.
  let slot = 1;
  let position: Position = { index: 0, path: null, offset: 0, parser: null, keep: true };
  for (; ; slot++) {
    let fresh = false;
    const value = await options.step<JsonValue>(`analyze_logs/part-${slot}`, () => {
      fresh = true;
      return RESUMED;
    });
    if (fresh) break;
    if (isPart(value)) {
      state.apply(value);
      position = value.next;
    }
  }
  const partMs = options.partMs ?? PART_MS;
  const partBytes = options.partBytes ?? PART_BYTES;
  const journal = async (next: Position): Promise<void> => {
    const part = state.takePart(next);
    await options.step(`analyze_logs/part-${++slot}`, () => part as unknown as JsonValue);
  };

  // A listing taken after a restart finds the file to go on with by its path (files may have come and gone).
  let start = position.index;
  if (position.path !== null) {
    const found = logFiles.findIndex((file) => file.relative === position.path);
    start = found >= 0 ? found : Math.min(position.index, logFiles.length);
  }
  options.onProgress(start, logFiles.length);
  for (let index = start; index < logFiles.length; index++) {
    signal.throwIfAborted();
    const file = logFiles[index] as WalkedFile;
    const resume = index === start && position.path === file.relative && position.offset > 0 ? position : null;
    await scanFile(file, index, resume, { options, state, redactPath, redactPii, partMs, partBytes, journal });
    options.onProgress(index + 1, logFiles.length);
    if (index + 1 < logFiles.length && state.partDue(partMs, partBytes, false)) {
      await journal({ index: index + 1, path: (logFiles[index + 1] as WalkedFile).relative, offset: 0, parser: null, keep: true });
    }
  }

  return buildReport({
    path: redactPath(options.target),
    logFiles: logFiles.length,
    walkedFiles: walk.files.length,
    escapedSymlinks: walk.escapedSymlinks,
    truncated: walk.truncated,
    totals: state.totals,
    perFile: [...state.perFile.values()],
    perHour: state.hourly.toJSON(),
    formats: Object.fromEntries(state.formats),
    failedFiles: state.failedFiles,
    templates: state.miner.clusters().map((cluster) => ({
      cluster,
      stats: state.statsOf(state.stats, cluster.id),
      implied: state.impliedOf(cluster),
    })),
    evictedTemplates: state.miner.evicted,
    top: options.top,
    resumedParts: state.resumedParts,
  });
}

interface FileScanContext {
  options: ScanOptions;
  state: ScanState;
  redactPath(text: string): string;
  redactPii(text: string): string;
  partMs: number;
  partBytes: number;
  journal(next: Position): Promise<void>;
}

/** Continuation lines that make an event an error whatever its first line says. */
const ERROR_CONTINUATION = /^(?:\s*at |Caused by:|Traceback \(most recent call last\):|[\w$.]*(?:Exception|Error)(?::|$))/;

/** Reads one file (from `resume.offset` when given), counting its events; journals parts at event boundaries. */
async function scanFile(file: WalkedFile, index: number, resume: Position | null, context: FileScanContext): Promise<void> {
  const { options, state } = context;
  const relative = context.redactPath(file.relative);
  const referenceMs = file.mtimeMs ?? options.now ?? Date.now();
  const redactor = new SecretRedactor();
  let parser: FileLineParser | null = resume?.parser ? FileLineParser.restore(resume.parser, { referenceMs }) : null;
  if (parser) state.fileReport(relative, parser.format.name).format = parser.format.name;
  let keep = resume?.keep ?? true;
  let pending: PendingEvent | null = null;
  const sample: { line: string; offset: number }[] = [];
  const format = () => parser?.format.name ?? 'none';
  // Listed from its start, also when it turns out to be unreadable (not when binary: binary files are not logs).
  const report = state.fileReport(relative, format());
  const fileId = state.fileId(relative);
  // The facts of the event being counted: one object per file, refilled per event (the stats keep none of it).
  let exampleLine = '';
  const facts: EventFacts = {
    epochMs: null,
    severity: null,
    stated: false,
    lines: 0,
    fileId,
    file: relative,
    component: null,
    example: () => (exampleLine.length > MAX_EXAMPLE_LENGTH ? `${exampleLine.slice(0, MAX_EXAMPLE_LENGTH)}…` : exampleLine),
  };

  const commit = () => {
    const event = pending;
    pending = null;
    if (!event) return;
    const { parsed } = event;
    // Untimed events (stack traces, continuations of a kind the parser does not know) follow the last timestamp.
    if (options.since !== null) {
      if (parsed.epochMs !== null) keep = parsed.epochMs >= options.since;
      if (!keep) {
        state.skipBySince(event.lines);
        return;
      }
    }
    const cluster = state.miner.add(parsed.message, event.clean);
    const implied = state.impliedOf(cluster);
    const severity = parsed.severity ?? implied;
    state.countEvent(parsed.epochMs, severity, event.lines, report);
    facts.epochMs = parsed.epochMs;
    facts.severity = severity;
    facts.stated = parsed.severity !== null;
    facts.lines = event.lines;
    facts.component = parsed.component;
    exampleLine = event.clean;
    state.countTemplate(cluster.id, facts);
  };

  // Synchronous unless a part is journaled: a promise per line would cost more than the line's analysis.
  const handle = (line: string, offset: number): Promise<void> | undefined => {
    state.partBytes += line.length + 1;
    if (!NON_BLANK.test(line)) return undefined;
    // Redacting before mining keeps secrets and personal data out of templates as well as examples.
    const clean = context.redactPii(redactor.redact(line));
    const parsed = (parser as FileLineParser).parse(clean);
    if (parsed.continuation && pending && pending.lines < MAX_EVENT_LINES) {
      pending.lines++;
      if (pending.parsed.severity === null && ERROR_CONTINUATION.test(line)) pending.parsed.severity = 'ERROR';
      return undefined;
    }
    commit();
    if (state.partDue(context.partMs, context.partBytes, true)) {
      return context.journal({ index, path: file.relative, offset, parser: (parser as FileLineParser).snapshot(), keep }).then(() => {
        pending = { parsed, clean, lines: 1 };
      });
    }
    pending = { parsed, clean, lines: 1 };
    return undefined;
  };

  // The sampled lines are handled in one go after the detection: paced like any other lines.
  const pacer = new Pacer(options.signal);
  const startSampled = async () => {
    parser = new FileLineParser(
      sample.map((entry) => entry.line),
      { referenceMs },
    );
    report.format = parser.format.name;
    for (const entry of sample.splice(0)) {
      const journaled = handle(entry.line, entry.offset);
      if (journaled) await journaled;
      if (pacer.due(entry.line.length)) await pacer.pause();
    }
  };

  try {
    await forEachLine(
      await options.confinement.openForReading(file.path),
      (line, offset) => {
        if (parser) return handle(line, offset);
        // The header format and the year of year-less dates come from the first lines.
        sample.push({ line, offset });
        return sample.length >= SAMPLE_LINES ? startSampled() : undefined;
      },
      { signal: options.signal, gzip: isGzip(file.relative), rejectBinary: true, startOffset: resume?.offset ?? 0 },
    );
    if (!parser) await startSampled();
    commit();
    state.fileDone(relative, format(), 'read');
  } catch (error) {
    if (options.signal.aborted) throw options.signal.reason;
    if (error instanceof BinaryContentError && error.byteOffset === 0) {
      state.fileDone(relative, format(), 'binary');
      return;
    }
    commit();
    state.fileDone(relative, format(), 'failed', redactSecrets(describe(error)));
  }
}

/** An error's code and message without a stack (paths in it are inside the roots). */
function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
