/**
 * The work of `audit_repository`: list a source tree as its owner sees it — in a git work tree the files git
 * lists (tracked, and untracked ones no ignore rule excludes), elsewhere the walk minus what its `.gitignore`
 * files and the usual vendored directories exclude — then count files and lines per language, find the largest
 * files and secret-like strings (marking those in test fixtures), and read recent commit activity. The server's
 * own state is denied like everywhere (it is never listed, whatever git says). Secret values never enter the
 * report: only their kind and a redacted preview, and paths with secrets redacted (a file can be named after a
 * key).
 */
import path from 'node:path';

import { findSecrets, redactSecrets, type SecretKind } from '../../core/redaction.js';
import { isBinaryBlock } from '../binary.js';
import { forEachLine } from '../lines.js';
import type { Confinement } from '../roots.js';
import { confinedFile, walkFiles, type WalkResult } from '../walk.js';
import { type GitActivity, gitActivity, gitFiles } from './git.js';
import { IgnoreRules } from './ignore-rules.js';
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

/**
 * A secret-like string (its value is never included). `fixture`: the file is a test or a fixture (a `test/`,
 * `fixtures/`, `__mocks__/` … directory, or `*.test.*`, `*_test.go`), where planted credentials are expected.
 */
export type SecretReport = { path: string; line: number; kind: SecretKind; preview: string; fixture: boolean };

/** The audit's result (the tool's `structuredContent`). */
export type AuditReport = {
  path: string;
  /** How the files were listed: `git` (git ls-files) or `walk` (the tree minus .gitignore rules and vendored directories). */
  listing: 'git' | 'walk';
  /** Files and directories a .gitignore rule left out of a walk (`null` for a git listing, where git applies the rules). */
  ignoredEntries: number | null;
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
  /** All findings, including those beyond the cap, and how many of them are in test fixtures. */
  secretCount: number;
  fixtureSecretCount: number;
};

export const MAX_FILES = 200_000;
/** Files above this size are not read (generated bundles, data dumps). */
export const MAX_FILE_BYTES = 2 * 1024 * 1024;
export const MAX_LARGEST = 10;
export const MAX_SECRETS = 200;
/** Directory names never descended into by a walk: VCS metadata, dependencies, caches. */
const SKIPPED_DIRECTORIES = new Set(['.git', '.hg', '.svn', 'node_modules', '.venv', 'venv', '__pycache__']);
/** Directories that hold tests and fixtures. */
const FIXTURE_DIRECTORIES = new Set([
  'test',
  'tests',
  '__tests__',
  'spec',
  'specs',
  'fixture',
  'fixtures',
  '__fixtures__',
  'testdata',
  'test-data',
  'mocks',
  '__mocks__',
  'e2e',
]);
/** Test files by name: `x.test.ts`, `x.spec.js`, `x_test.go`, `test_x.py`. */
const TEST_FILE = /\.(?:test|spec)\.[^./]+$|_test\.[^./]+$|^test_[^/]*\.py$/;

/** Whether a relative path is a test or a fixture (see {@link SecretReport}). */
export function isFixturePath(relative: string): boolean {
  const parts = relative.split('/');
  const name = parts.pop() as string;
  return TEST_FILE.test(name) || parts.some((part) => FIXTURE_DIRECTORIES.has(part.toLowerCase()));
}
/** Bytes sniffed to tell binary files without a telling extension (see {@link isBinaryBlock}). */
const SNIFF_BYTES = 8192;

/**
 * Audits `options.target`; see the module comment.
 *
 * @throws the signal's reason when aborted.
 */
export async function auditRepository(options: AuditOptions): Promise<AuditReport> {
  const { signal } = options;
  const { walk, listing, ignoredEntries } = await listFiles(options);
  const report: AuditReport = {
    path: redactSecrets(options.target),
    listing,
    ignoredEntries,
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
    fixtureSecretCount: 0,
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
      const fixture = isFixturePath(file.relative);
      let lineNumber = 0;
      try {
        await forEachLine(
          await options.confinement.openForReading(file.path),
          (line) => {
            lineNumber++;
            for (const finding of findSecrets(line)) {
              report.secretCount++;
              if (fixture) report.fixtureSecretCount++;
              if (report.secrets.length < MAX_SECRETS) {
                report.secrets.push({ path: relative, line: lineNumber, kind: finding.kind, preview: finding.preview, fixture });
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

/**
 * The files to audit: git's list in a git work tree, else a walk that leaves out vendored directories and what
 * the tree's `.gitignore` files exclude.
 */
async function listFiles(options: AuditOptions): Promise<{ walk: WalkResult; listing: AuditReport['listing']; ignoredEntries: number | null }> {
  const { target, confinement, signal } = options;
  const listed = await gitFiles(target, signal);
  if (listed) {
    const walk: WalkResult = { files: [], escapedSymlinks: 0, truncated: false };
    for (const relative of listed.sort()) {
      signal.throwIfAborted();
      if (walk.files.length >= MAX_FILES) {
        walk.truncated = true;
        break;
      }
      // Denied paths (the server's state) are left out whatever git says, as are links leading out of the roots.
      const file = await confinedFile(target, relative, confinement, walk);
      if (file) walk.files.push(file);
    }
    return { walk, listing: 'git', ignoredEntries: null };
  }
  const rules = new IgnoreRules(confinement);
  const walk = await walkFiles(target, {
    confinement,
    signal,
    maxFiles: MAX_FILES,
    skipDirectory: (name) => SKIPPED_DIRECTORIES.has(name),
    enterDirectory: (relative, absolute) => rules.enter(relative, absolute),
    exclude: (relative, isDirectory) => rules.excludes(relative, isDirectory),
  });
  return { walk, listing: 'walk', ignoredEntries: rules.ignored };
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
