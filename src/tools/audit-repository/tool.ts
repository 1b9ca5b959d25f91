/**
 * The `audit_repository` tool: arguments, output schema, confinement checks and the readable summary around
 * {@link auditRepository}.
 */
import { stat } from 'node:fs/promises';
import { z } from 'zod';
import type { PathConfinement } from '../../core/confinement.js';
import { defineTool, textResult, ToolInputError } from '../../core/tool.js';
import { resolveConfined, type ConfinedPath } from '../roots.js';
import { SECRET_KINDS } from '../../core/redaction.js';
import { auditRepository, type AuditReport } from './scan.js';

const inputSchema = z.object({
  path: z.string().min(1).describe('Absolute path of the repository (or a directory in it) to audit, inside the allowed roots.'),
});

const count = z.number().int();
const outputSchema = z.object({
  path: z.string(),
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
    lastCommitAt: z.string().nullable(),
    perWeek: z.record(z.string(), count),
  }),
  secrets: z.array(z.object({ path: z.string(), line: count, kind: z.enum(SECRET_KINDS), preview: z.string() })),
  secretCount: count,
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
    'Walks a source repository (skipping .git, node_modules, binary and very large files) and reports files and ' +
    'lines per language, the largest files, commit activity of the last 90 days, and secret-like strings ' +
    '(private keys, cloud, payment, package registry and chat tokens, passwords and other credentials) by file and ' +
    'line with their values redacted. Read-only.',
  inputSchema,
  outputSchema,
  execution: 'task-optional',
  idempotent: true,
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
    return textResult(summarize(report), { structuredContent: report });
  },
});

/** A short human-readable account of a report (secret previews are already redacted). */
function summarize(report: AuditReport): string {
  const number = (n: number) => n.toLocaleString('en-US');
  const lines = [
    `Audited ${number(report.files)} files, ${number(report.lines)} lines under ${report.path} ` +
      `(skipped ${report.skipped.binary} binary, ${report.skipped.tooLarge} too large, ${report.skipped.unreadable} unreadable).`,
    `Languages: ${report.languages.slice(0, 8).map((l) => `${l.language} ${number(l.lines)}`).join(', ') || 'none'}.`,
    report.git.available
      ? `Git: ${report.git.commits} commits since ${report.git.since.slice(0, 10)} by ${report.git.authors.length} authors.`
      : `Git: ${report.git.reason}.`,
    `Secret-like strings: ${report.secretCount}.`,
  ];
  for (const secret of report.secrets.slice(0, 20)) {
    lines.push(`  ${secret.path}:${secret.line} ${secret.kind} ${secret.preview}`);
  }
  return lines.join('\n');
}
