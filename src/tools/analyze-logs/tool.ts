/**
 * The `analyze_logs` tool: arguments, output schema, confinement checks and the readable summary around
 * {@link scanLogs}.
 */
import { z } from 'zod';
import type { PathConfinement } from '../../core/confinement.js';
import { defineTool, textResult, ToolInputError } from '../../core/tool.js';
import { MAX_LINE_LENGTH } from '../lines.js';
import { resolveConfined, type ConfinedPath } from '../roots.js';
import { SEVERITIES } from './severity.js';
import { isValidGlob, LOG_FILES_DESCRIPTION } from './files.js';
import { scanLogs, type LogScanReport } from './scan.js';

const inputSchema = z.object({
  path: z.string().min(1).describe('Absolute path of a log file or of a directory tree to scan (inside the allowed roots).'),
  since: z
    .string()
    .optional()
    .describe('ISO 8601 date or date-time (UTC unless it has an offset); lines stamped earlier are skipped.'),
  top: z.number().int().min(1).max(1000).default(20).describe('How many templates to return, most frequent first.'),
  include: z
    .string()
    .optional()
    .describe(
      'Glob of extra files to scan besides the log files named in the tool description (e.g. "**/*.txt"), relative ' +
        'to path; a pattern without "/" matches file names at any depth.',
    ),
});

const severityCounts = z.object({
  ...Object.fromEntries(SEVERITIES.map((s) => [s, z.number().int()])),
  UNKNOWN: z.number().int(),
});
const bucket = z.object({ lines: z.number().int(), severities: severityCounts });

const outputSchema = z.object({
  path: z.string(),
  files: z.number().int(),
  lines: z.number().int(),
  linesBeforeSince: z.number().int(),
  skippedFiles: z.number().int(),
  binaryFiles: z.number().int(),
  escapedSymlinks: z.number().int(),
  truncated: z.boolean(),
  severities: severityCounts,
  perFile: z.array(bucket.extend({ path: z.string() })),
  perFileTruncated: z.boolean(),
  perHour: z.record(z.string(), bucket),
  templateCount: z.number().int(),
  evictedTemplates: z.number().int(),
  templates: z.array(z.object({ template: z.string(), count: z.number().int(), example: z.string() })),
  failedFiles: z.array(z.object({ path: z.string(), error: z.string() })),
});

type Args = z.output<typeof inputSchema>;

const ISO_8601 = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * Parses `since` strictly as ISO 8601; a date-time without an offset is UTC.
 *
 * @returns epoch ms, or `null` when absent.
 * @throws ToolInputError when present but not a valid ISO 8601 date or date-time.
 */
export function parseSince(since: string | undefined): number | null {
  if (since === undefined) return null;
  const m = ISO_8601.exec(since.trim());
  const zone = m?.[3] ? (m[3].toUpperCase() === 'Z' ? 'Z' : m[3].replace(/^([+-]\d{2}):?(\d{2})$/, '$1:$2')) : 'Z';
  const epochMs = m ? Date.parse(m[2] ? `${m[1]}T${m[2]}${zone}` : `${m[1]}T00:00:00Z`) : Number.NaN;
  if (Number.isNaN(epochMs)) throw new ToolInputError(`since must be an ISO 8601 date or date-time: ${since}`);
  return epochMs;
}

async function checkArguments(args: Args, spec: PathConfinement): Promise<ConfinedPath> {
  parseSince(args.since);
  if (args.include !== undefined && !isValidGlob(args.include)) {
    throw new ToolInputError(`include is not a valid glob: ${args.include}`);
  }
  return resolveConfined(args.path, spec);
}

/** The `analyze_logs` tool definition. */
export const analyzeLogsTool = defineTool({
  name: 'analyze_logs',
  title: 'Analyze logs',
  description:
    'Scans a log file or a directory tree of logs and reports severities per file and per UTC hour and the most ' +
    'frequent message templates (variable parts shown as <*>), each with an example line (secrets redacted). ' +
    `Reads, also when path is a single file: ${LOG_FILES_DESCRIPTION}. Other files are counted as skipped, and so ` +
    'are files whose content is binary (a NUL byte or mostly non-text bytes), whatever their name. Lines longer ' +
    `than ${MAX_LINE_LENGTH.toLocaleString('en-US')} characters are cut there. Read-only.`,
  inputSchema,
  outputSchema,
  execution: 'task-optional',
  idempotent: true,
  immediateResponse: (args) =>
    `Started scanning ${args.path} for severities and the most frequent message templates; ` +
    'this takes seconds for a few megabytes of logs and a few minutes for gigabytes.',
  async preflight(args, context) {
    await checkArguments(args, context);
  },
  async run(args, ctx) {
    // Checked again: the tree may have changed between preflight and run (a task can start much later).
    const { target, confinement } = await checkArguments(args, ctx);
    const report = await scanLogs({
      target,
      confinement,
      since: parseSince(args.since),
      top: args.top,
      include: args.include ?? null,
      signal: ctx.signal,
      onProgress: (done, total) => ctx.progress(done, total, 'scanned files'),
    });
    ctx.logger.info({ files: report.files, lines: report.lines, templates: report.templateCount }, 'logs analyzed');
    return textResult(summarize(report), { structuredContent: report });
  },
});

const TEXT_TEMPLATES = 10;

/** A short human-readable account of a report. */
function summarize(report: LogScanReport): string {
  const number = (n: number) => n.toLocaleString('en-US');
  const severities = Object.entries(report.severities)
    .filter(([, count]) => count > 0)
    .map(([name, count]) => `${name} ${number(count)}`)
    .join(', ');
  const lines = [
    `Scanned ${number(report.files)} log files (${number(report.skippedFiles)} other files skipped), ` +
      `${number(report.lines)} lines under ${report.path}.`,
    `Severities: ${severities || 'none'}.`,
  ];
  if (report.linesBeforeSince > 0) lines.push(`${number(report.linesBeforeSince)} lines before "since" skipped.`);
  if (report.binaryFiles > 0) lines.push(`${number(report.binaryFiles)} files with binary content skipped.`);
  if (report.escapedSymlinks > 0) lines.push(`${report.escapedSymlinks} symlinks leading outside the roots skipped.`);
  if (report.failedFiles.length > 0) lines.push(`${report.failedFiles.length} files could not be read.`);
  lines.push(`${number(report.templateCount)} message templates; most frequent:`);
  for (const template of report.templates.slice(0, TEXT_TEMPLATES)) {
    lines.push(`  ${number(template.count)} × ${template.template}`);
  }
  return lines.join('\n');
}
