/**
 * The `audit_repository` tool: arguments, output schema, confinement checks and the readable summary around
 * {@link auditRepository}.
 */
import { stat } from 'node:fs/promises';

import { z } from 'zod';

import type { PathConfinement } from '../../core/confinement.js';
import { SECRET_KINDS } from '../../core/redaction.js';
import { defineTool, localPath, textResult, ToolInputError } from '../../core/tool.js';
import { type ConfinedPath, resolveConfined } from '../roots.js';
import { detailArgument, summarized, SUMMARY_FIELDS } from '../structured-summary.js';
import { type AuditReport, auditRepository } from './scan.js';

const inputSchema = z.object({
  path: localPath(z.string().min(1).describe('Absolute path of the repository (or a directory in it) to audit, inside the allowed roots.')),
  detail: detailArgument('every language and up to 200 secret findings'),
});

const count = z.number().int();
const outputSchema = z.object({
  ...SUMMARY_FIELDS,
  path: z.string(),
  listing: z.enum(['git', 'walk']),
  ignoredEntries: count.nullable(),
  files: count,
  lines: count,
  bytes: count,
  skipped: z.object({ binary: count, tooLarge: count, unreadable: count }),
  escapedSymlinks: count,
  truncated: z.boolean(),
  languages: z.array(z.object({ language: z.string(), files: count, lines: count })),
  largestFiles: z.array(z.object({ path: z.string(), bytes: count })),
  git: z.object({
    available: z.boolean(),
    reason: z.string().nullable(),
    since: z.string(),
    commits: count,
    authors: z.array(z.object({ name: z.string(), commits: count })),
    authorCount: count,
    lastCommitAt: z.string().nullable(),
    perWeek: z.record(z.string(), count),
  }),
  secrets: z.array(z.object({ path: z.string(), line: count, kind: z.enum(SECRET_KINDS), preview: z.string(), fixture: z.boolean() })),
  secretCount: count,
  fixtureSecretCount: count,
});

async function resolveDirectory(userPath: string, spec: PathConfinement): Promise<ConfinedPath> {
  const confined = await resolveConfined(userPath, spec);
  if (!(await stat(confined.target)).isDirectory()) throw new ToolInputError(`path is not a directory: ${userPath}`);
  return confined;
}

/** The `audit_repository` tool definition. */
export const auditRepositoryTool = defineTool({
  name: 'audit_repository',
  title: 'Audit repository',
  description:
    'Audits a source repository as its owner sees it: in a git work tree the files git lists (tracked, and ' +
    'untracked ones no ignore rule excludes), elsewhere the tree minus its .gitignore rules and vendored ' +
    'directories; binary and very large files are skipped. Reports files and lines per language, the largest ' +
    'files, commit activity of the last 90 days, and secret-like strings (private keys, AWS, Google Cloud and ' +
    'Azure keys, GitHub, GitLab, Slack and Stripe tokens, JWTs, passwords in URLs and other credentials) by file ' +
    'and line with their values redacted, those in tests and fixtures marked as such. Read-only.',
  inputSchema,
  outputSchema,
  execution: 'task-optional',
  idempotent: true,
  immediateResponse: (args) =>
    `Started auditing the repository at ${args.path} (languages, largest files, commits of the last 90 days, ` +
    'secret-like strings); this takes seconds for a small repository and a few minutes for a very large one.',
  async preflight(args, context) {
    await resolveDirectory(args.path, context);
  },
  async run(args, ctx) {
    // Checked again: the tree may have changed between preflight and run (a task can start much later).
    const { target, confinement } = await resolveDirectory(args.path, ctx);
    const report = await auditRepository({
      target,
      confinement,
      signal: ctx.signal,
      onProgress: (done, total) => ctx.progress(done, total, 'scanned files'),
    });
    ctx.logger.info({ files: report.files, lines: report.lines, secrets: report.secretCount }, 'repository audited');
    // The text from the whole report; structuredContent, which a client may give the model instead, summarized (issue 27 §2).
    return textResult(summarize(report), { structuredContent: summarized(report, args.detail, ['secrets', 'languages', 'largestFiles']) });
  },
});

const TEXT_LANGUAGES = 8;
const TEXT_LARGEST = 5;
const TEXT_SECRETS = 20;
const TEXT_AUTHORS = 3;

/** `1 file`, `2 files`. */
function plural(count: number, one: string, many = `${one}s`): string {
  return `${count.toLocaleString('en-US')} ${count === 1 ? one : many}`;
}

/** A short human-readable account of a report (secret previews are already redacted). */
function summarize(report: AuditReport): string {
  const number = (n: number) => n.toLocaleString('en-US');
  const { skipped } = report;
  const listing =
    report.listing === 'git'
      ? 'as git lists them'
      : `walking the tree${report.ignoredEntries ? `, ${plural(report.ignoredEntries, 'file or directory', 'files and directories')} left out by .gitignore rules` : ''}`;
  const lines = [
    `Audited ${plural(report.files, 'file')}, ${plural(report.lines, 'line')} under ${report.path} (${listing}; skipped ` +
      `${number(skipped.binary)} binary, ${number(skipped.tooLarge)} too large, ${number(skipped.unreadable)} unreadable).`,
  ];
  const languages = report.languages.slice(0, TEXT_LANGUAGES).map((l) => `${l.language} ${number(l.lines)}`);
  const moreLanguages = report.languages.length - languages.length;
  lines.push(`Languages (lines): ${languages.join(', ') || 'none'}${moreLanguages > 0 ? `, and ${plural(moreLanguages, 'more language')}` : ''}.`);
  if (report.largestFiles.length > 0) {
    const largest = report.largestFiles.slice(0, TEXT_LARGEST).map((f) => `${f.path} (${number(f.bytes)} bytes)`);
    const moreLargest = report.largestFiles.length - largest.length;
    lines.push(`Largest files: ${largest.join(', ')}${moreLargest > 0 ? `, and ${number(moreLargest)} more in structuredContent` : ''}.`);
  }
  const { git } = report;
  if (git.available) {
    const named = git.authors.slice(0, TEXT_AUTHORS).map((a) => `${a.name} ${number(a.commits)}`);
    const moreAuthors = git.authorCount - named.length;
    if (moreAuthors > 0) named.push(`and ${number(moreAuthors)} more`);
    lines.push(
      `Git: ${plural(git.commits, 'commit')} since ${git.since.slice(0, 10)} by ${plural(git.authorCount, 'author')}` +
        `${named.length > 0 ? ` (${named.join(', ')})` : ''}.`,
    );
  } else {
    lines.push(`Git: ${git.reason}.`);
  }
  const real = report.secretCount - report.fixtureSecretCount;
  lines.push(
    `Secret-like strings: ${number(report.secretCount)}` +
      (report.fixtureSecretCount > 0 ? ` (${number(real)} outside tests and fixtures, ${number(report.fixtureSecretCount)} in test fixtures)` : '') +
      '.',
  );
  // Findings outside tests first: those are the ones to act on.
  const ordered = [...report.secrets.filter((s) => !s.fixture), ...report.secrets.filter((s) => s.fixture)];
  for (const secret of ordered.slice(0, TEXT_SECRETS)) {
    lines.push(`  ${secret.path}:${secret.line} ${secret.kind} ${secret.preview}${secret.fixture ? ' [test fixture]' : ''}`);
  }
  const notShown = report.secretCount - Math.min(ordered.length, TEXT_SECRETS);
  if (notShown > 0)
    lines.push(
      `  … ${plural(notShown, 'more finding')}${report.secretCount > report.secrets.length ? ' (the structured report lists the first 200)' : ' (see structuredContent)'}`,
    );
  return lines.join('\n');
}
