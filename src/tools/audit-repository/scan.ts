/**
 * The work of `audit_repository`: walk a source tree (without `.git`, `node_modules` and other vendored or
 * generated directories), count files and lines per language, find the largest files and secret-like strings,
 * and read recent commit activity. Secret values never enter the report: only their kind and a redacted preview,
 * and paths with secrets redacted (a file can be named after a key).
 */
import path from 'node:path';
import { isBinaryBlock } from '../binary.js';
import { forEachLine } from '../lines.js';
import { findSecrets, redactSecrets, type SecretKind } from '../../core/redaction.js';
import type { Confinement } from '../roots.js';
import { walkFiles } from '../walk.js';
import { gitActivity, type GitActivity } from './git.js';
import { hasBinaryExtension, languageOf } from './languages.js';

/** Options of {@link auditRepository}. */
export interface AuditOptions {
  /** Real path of a directory inside the roots. */
  target: string;
  /** The allowed roots and the denied paths; every file is opened through it. */
  confinement: Confinement;
  signal: AbortSignal;
  /** Called with files done and files in total, once before the first file and after each file. */
  onProgress(done: number, total: number): void;
  /** Days of commit history to summarise. Default 90. */
  historyDays?: number;
}

/** A secret-like string (its value is never included). */
export type SecretReport = { path: string; line: number; kind: SecretKind; preview: string };

/** The audit's result (the tool's `structuredContent`). */
export type AuditReport = {
  path: string;
  /** Text files read. */
  files: number;
  lines: number;
  /** Bytes of the text files read. */
  bytes: number;
  skipped: { binary: number; tooLarge: number; unreadable: number };
  escapedSymlinks: number;
  /** Whether the file list hit its cap. */
  truncated: boolean;
  /** Per language, most lines first. */
  languages: { language: string; files: number; lines: number }[];
  /** The largest files of any kind, biggest first, at most {@link MAX_LARGEST}. */
  largestFiles: { path: string; bytes: number }[];
  git: GitActivity;
  /** Findings in path and line order, at most {@link MAX_SECRETS}. */
  secrets: SecretReport[];
  /** All findings, including those beyond the cap. */
  secretCount: number;
};

export const MAX_FILES = 200_000;
/** Files above this size are not read (generated bundles, data dumps). */
export const MAX_FILE_BYTES = 2 * 1024 * 1024;
export const MAX_LARGEST = 10;
export const MAX_SECRETS = 200;
/** Directory names never descended into: VCS metadata, dependencies, build output. */
const SKIPPED_DIRECTORIES = new Set(['.git', '.hg', '.svn', 'node_modules', '.venv', 'venv', '__pycache__']);
/** Bytes sniffed to tell binary files without a telling extension (see {@link isBinaryBlock}). */
const SNIFF_BYTES = 8192;

/**
 * Audits `options.target`; see the module comment.
 *
 * @throws the signal's reason when aborted.
 */
export async function auditRepository(options: AuditOptions): Promise<AuditReport> {
  const { signal } = options;
  const walk = await walkFiles(options.target, {
    confinement: options.confinement,
    signal,
    maxFiles: MAX_FILES,
    skipDirectory: (name) => SKIPPED_DIRECTORIES.has(name),
  });
  const report: AuditReport = {
    path: redactSecrets(options.target),
    files: 0,
    lines: 0,
    bytes: 0,
    skipped: { binary: 0, tooLarge: 0, unreadable: 0 },
    escapedSymlinks: walk.escapedSymlinks,
    truncated: walk.truncated,
    languages: [],
    largestFiles: [...walk.files]
      .sort((a, b) => b.size - a.size || (a.relative < b.relative ? -1 : 1))
      .slice(0, MAX_LARGEST)
      .map((file) => ({ path: redactSecrets(file.relative), bytes: file.size })),
    git: await gitActivity(options.target, options.historyDays ?? 90, signal),
    secrets: [],
    secretCount: 0,
  };
  const languages = new Map<string, { files: number; lines: number }>();

  options.onProgress(0, walk.files.length);
  for (const [index, file] of walk.files.entries()) {
    signal.throwIfAborted();
    const name = path.posix.basename(file.relative);
    if (file.size > MAX_FILE_BYTES) report.skipped.tooLarge++;
    else if (hasBinaryExtension(name) || (await looksBinary(file.path, options.confinement))) report.skipped.binary++;
    else {
      const relative = redactSecrets(file.relative);
      let lineNumber = 0;
      try {
        await forEachLine(
          await options.confinement.openForReading(file.path),
          (line) => {
            lineNumber++;
            for (const finding of findSecrets(line)) {
              report.secretCount++;
              if (report.secrets.length < MAX_SECRETS) {
                report.secrets.push({ path: relative, line: lineNumber, kind: finding.kind, preview: finding.preview });
              }
            }
          },
          { signal },
        );
        const language = languageOf(name);
        const counts = languages.get(language) ?? { files: 0, lines: 0 };
        counts.files++;
        counts.lines += lineNumber;
        languages.set(language, counts);
        report.files++;
        report.lines += lineNumber;
        report.bytes += file.size;
      } catch {
        if (signal.aborted) throw signal.reason;
        report.skipped.unreadable++;
      }
    }
    options.onProgress(index + 1, walk.files.length);
  }
  report.languages = [...languages]
    .map(([language, counts]) => ({ language, ...counts }))
    .sort((a, b) => b.lines - a.lines || (a.language < b.language ? -1 : 1));
  return report;
}

/** Whether the head of the file is binary data (see {@link isBinaryBlock}). */
async function looksBinary(file: string, confinement: Confinement): Promise<boolean> {
  const handle = await confinement.openForReading(file).catch(() => null);
  if (!handle) return false;
  try {
    const buffer = Buffer.alloc(SNIFF_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, SNIFF_BYTES, 0);
    return isBinaryBlock(buffer.subarray(0, bytesRead));
  } finally {
    await handle.close();
  }
}
