/**
 * The `analyze_logs` tool: arguments, output schema, confinement checks and the readable summary around
 * {@link scanLogs}.
 */
import { z } from 'zod';

import type { PathConfinement } from '../../core/confinement.js';
import { defineTool, localPath, textResult, ToolInputError } from '../../core/tool.js';
import { MAX_LINE_LENGTH } from '../lines.js';
import { DEFAULT_PII, PII_KINDS } from '../pii.js';
import { type ConfinedPath, resolveConfined } from '../roots.js';
import { isValidGlob, LOG_FILES_DESCRIPTION } from './files.js';
import { SUMMARY_ITEMS, summaryReport } from './report.js';
import { scanLogs } from './scan.js';
import { SEVERITIES } from './severity.js';
import { summarize } from './text-report.js';

const inputSchema = z.object({
  path: localPath(z.string().min(1).describe('Absolute path of a log file or of a directory tree to scan (inside the allowed roots).')),
  since: z
    .string()
    .optional()
    .describe(
      'ISO 8601 date or date-time (UTC unless it has an offset); events stamped earlier are skipped. An event ' +
        'without a usable timestamp (a continuation line, a line in an unknown format) follows the last ' +
        'timestamped line before it in its file; one before the first timestamp of its file is kept.',
    ),
  top: z.number().int().min(1).max(1000).default(20).describe('How many templates each list of the report shows.'),
  detail: z
    .enum(['summary', 'full'])
    .default('summary')
    .describe(
      `structuredContent: "summary" (default) keeps every count and the first ${SUMMARY_ITEMS} templates of each list, without ` +
        'the hourly counts; "full" adds events per hour, every file and all `top` templates of each list (often hundreds of kilobytes).',
    ),
  include: z
    .string()
    .optional()
    .describe(
      'Glob of extra files to scan besides the log files named in the tool description (e.g. "**/*.txt"), relative ' +
        'to path; a pattern without "/" matches file names at any depth.',
    ),
  redact: z
    .array(z.enum(PII_KINDS))
    .default([...DEFAULT_PII])
    .describe(
      'Personal data replaced in templates and examples: "email" (addresses), "card" (payment card numbers, ' +
        'Luhn-checked), "ip" (IPv4 and IPv6 addresses). Default ["email","card"]; secrets are always redacted.',
    ),
});

const severityCounts = z.object({
  ...Object.fromEntries(SEVERITIES.map((s) => [s, z.number().int()])),
  UNKNOWN: z.number().int(),
});
const bucket = z.object({ lines: z.number().int(), events: z.number().int(), severities: severityCounts });
const severityName = z.enum([...SEVERITIES, 'UNKNOWN']);
const template = z.object({
  template: z.string(),
  severity: severityName,
  severitySource: z.enum(['stated', 'implied', 'none']),
  events: z.number().int(),
  lines: z.number().int(),
  severities: severityCounts,
  firstSeen: z.string().nullable(),
  lastSeen: z.string().nullable(),
  files: z.number().int(),
  fileSamples: z.array(z.string()),
  component: z.string().nullable(),
  example: z.string(),
  trend: z.enum(['new', 'spike']).nullable(),
  recentEvents: z.number().int(),
  spikeFactor: z.number().nullable(),
  peakHour: z.string().nullable(),
});

const outputSchema = z.object({
  path: z.string(),
  files: z.number().int(),
  lines: z.number().int(),
  events: z.number().int(),
  linesBeforeSince: z.number().int(),
  eventsBeforeSince: z.number().int(),
  skippedFiles: z.number().int(),
  binaryFiles: z.number().int(),
  escapedSymlinks: z.number().int(),
  truncated: z.boolean(),
  timeRange: z.object({ first: z.string(), last: z.string() }).nullable(),
  formats: z.record(z.string(), z.number().int()),
  severities: severityCounts,
  perFile: z.array(bucket.extend({ path: z.string(), format: z.string() })),
  perFileTruncated: z.boolean(),
  perHour: z.record(z.string(), bucket).optional(),
  detail: z.enum(['summary', 'full']).optional(),
  templateCount: z.number().int(),
  evictedTemplates: z.number().int(),
  attention: z.array(template),
  attentionCount: z.number().int(),
  trends: z.object({
    windowHours: z.number().int(),
    from: z.string().nullable(),
    to: z.string().nullable(),
    baselineHours: z.number(),
    new: z.array(template),
    newCount: z.number().int(),
    bursts: z.array(
      z.object({
        from: z.string(),
        to: z.string(),
        templates: z.number().int(),
        events: z.number().int(),
        components: z.array(z.object({ name: z.string(), templates: z.number().int() })),
        example: z.string(),
      }),
    ),
    spiking: z.array(template),
    spikingCount: z.number().int(),
  }),
  templates: z.array(template),
  resumedParts: z.number().int(),
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
    'Scans a log file or a directory tree of logs and reports, for the person on call: the FATAL, ERROR and WARN ' +
    'message templates first (variable parts shown as <*>, with counts, first and last seen, files and an ' +
    'example), what is new or spiking in the last hours against the hours before, events per UTC hour as a ' +
    'chart, and the most frequent templates. The header format of each file (timestamp, host, pid, level, ' +
    'logger) is detected from its first lines so that templates are mined on the message; a stack trace or ' +
    'traceback counts as one event; severity comes from the line, else from what the template implies. Secrets, ' +
    'e-mail addresses and card numbers (and IP addresses on request) are redacted. Dates without a year get the ' +
    "year that makes the file's sequence consistent (from its modification time, the order of its lines and " +
    `dates inside messages). Reads, also when path is a single file: ${LOG_FILES_DESCRIPTION}. Other files are ` +
    'counted as skipped, and so are files whose content is binary (a NUL byte or mostly non-text bytes), ' +
    `whatever their name. Lines longer than ${MAX_LINE_LENGTH.toLocaleString('en-US')} characters are cut there. ` +
    'As a task it is resumable: after a crash it continues after the last journaled part. Read-only.',
  inputSchema,
  outputSchema,
  execution: 'task-optional',
  idempotent: true,
  journaled: true,
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
      redact: args.redact,
      signal: ctx.signal,
      step: (name, fn) => ctx.step(name, fn),
      onProgress: (done, total) => ctx.progress(done, total, 'scanned files'),
    });
    ctx.logger.info({ files: report.files, lines: report.lines, templates: report.templateCount, resumedParts: report.resumedParts }, 'logs analyzed');
    // The text report is built from the full report either way; structuredContent is what a client may give the
    // model instead of the text (issue 27 §2), so it is the summary unless the caller asks for everything.
    const structured = args.detail === 'full' ? { ...report, detail: 'full' as const } : summaryReport(report);
    return textResult(summarize(report), { structuredContent: structured });
  },
});
