/**
 * The `cleanup_logs` tool: find old rotated logs below a writable root, show the user what would go and ask for
 * confirmation (`ctx.elicit`), then delete exactly the confirmed list in one journaled step.
 *
 * Durability: the analysis is journaled (`ctx.step('analyse')`), so the list the user confirmed is the list that
 * is deleted, however often the task is re-run (after the answer, or after a crash); each deletion is one
 * operation of the ledger (`ctx.operation`, effect `fs.delete`), reconciled after a crash by checking whether the
 * file still exists (issue 12).
 */
import { lstat, stat } from 'node:fs/promises';

import { z } from 'zod';

import { detailArgument, summarized, SUMMARY_FIELDS } from '../structured-summary.js';

/** The long lists of the report, cut in the summary structuredContent (issue 27 §2). */
const LISTS = ['candidates', 'deleted', 'skipped'] as const;
import {
  type AnyToolDefinition,
  defineTool,
  type ElicitResult,
  localPath,
  type OperationHandlers,
  OperationNotApplied,
  textResult,
  ToolInputError,
} from '../../core/tool.js';
import { MODEL_TEXT_MAX_CHARS, toModelLine } from '../../protocol/model-text.js';
import { confine, type ConfinedPath, resolveConfined } from '../roots.js';
import { type CleanupPlan, cleanupSelector, planCleanup } from './plan.js';
import { deleteConfirmed, type DeletionReport, Skipped, type SkipReason } from './remove.js';

/** Options of {@link cleanupLogsTool}. */
export interface CleanupLogsOptions {
  /**
   * Directories the tool may delete in (absolute; `serve --writable-root`). The denied paths of each call's
   * context (the server's own state) stay off limits inside them.
   */
  writableRoots: readonly string[];
}

const inputSchema = z.object({
  path: localPath(z.string().min(1).describe('Absolute path of a log directory (or one file) inside a writable root.')),
  olderThanDays: z.number().min(0).max(36_500).default(7).describe('Only files last modified more than this many days ago (0: any age).'),
  include: z
    .string()
    .optional()
    .describe('Glob of extra files to delete besides rotated logs (*.log.N, *.log.N.gz, *.log-YYYYMMDD, syslog.N, *.gz); relative to path.'),
  detail: detailArgument('every candidate, deleted and skipped file'),
});

const fileEntry = z.object({ path: z.string(), size: z.number().int() });
const outputSchema = z.object({
  ...SUMMARY_FIELDS,
  path: z.string(),
  cutoff: z.string(),
  decision: z.enum(['nothing-to-delete', 'confirmed', 'declined', 'cancelled']),
  candidates: z.array(fileEntry.extend({ modifiedAt: z.string() })),
  candidateBytes: z.number().int(),
  truncated: z.boolean(),
  deleted: z.array(fileEntry),
  skipped: z.array(z.object({ path: z.string(), reason: z.string() })),
  freedBytes: z.number().int(),
});
type Output = z.output<typeof outputSchema>;

const CONFIRM_SCHEMA = {
  type: 'object',
  properties: { confirm: { type: 'boolean', title: 'Delete these files', description: 'Nothing is deleted unless this is yes.', default: false } },
  required: ['confirm'],
};
/** Files named in the confirmation message; the rest is counted. */
const LISTED_IN_MESSAGE = 20;

/** `1.2 MiB` */
function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/**
 * File names may hold line breaks, bidi overrides or a planted `SYSTEM:`; they must not reshape the question, which
 * a model may read too (in `inputRequests`): each name is one line by the rule for model-facing text (a path is
 * allowed twice its length).
 */
const printable = (text: string): string => toModelLine(text, { maxChars: 2 * MODEL_TEXT_MAX_CHARS });

/** The question: how many files, how much, which ones (the first {@link LISTED_IN_MESSAGE}), from where. */
function confirmationMessage(plan: CleanupPlan): string {
  const count = plan.candidates.length;
  const lines = plan.candidates
    .slice(0, LISTED_IN_MESSAGE)
    .map((file) => `  ${printable(file.relative)}  ${formatBytes(file.size)}  ${new Date(file.mtimeMs).toISOString().slice(0, 16).replace('T', ' ')}`);
  if (count > LISTED_IN_MESSAGE) lines.push(`  … and ${count - LISTED_IN_MESSAGE} more`);
  return (
    `Delete ${count} old log file${count === 1 ? '' : 's'} (${formatBytes(plan.totalBytes)}) in ${printable(plan.target)}, last modified before ${plan.cutoff}?\n` +
    `${lines.join('\n')}${plan.truncated ? '\n(more files qualify; they are left for another cleanup)' : ''}`
  );
}

/** The user's decision from the answer: only an accepted form with `confirm: true` confirms. */
function decisionOf(answer: ElicitResult): Output['decision'] {
  if (answer.action === 'cancel') return 'cancelled';
  return answer.action === 'accept' && answer.content?.confirm === true ? 'confirmed' : 'declined';
}

function summary(plan: CleanupPlan, decision: Output['decision'], report?: DeletionReport): string {
  if (decision === 'nothing-to-delete') return `Nothing to delete in ${plan.target}: no rotated log was last modified before ${plan.cutoff}.`;
  if (!report) return `Nothing deleted (${decision}). ${plan.candidates.length} file(s), ${formatBytes(plan.totalBytes)}, were listed.`;
  const skipped = report.skipped.map((file) => `\n  skipped ${file.path}: ${file.reason}`).join('');
  return `Deleted ${report.deleted.length} of ${plan.candidates.length} file(s), ${formatBytes(report.freedBytes)} freed.${skipped}`;
}

/** The effect of one deletion (a key of {@link cleanupLogsOperations}). */
export const FS_DELETE_EFFECT = 'fs.delete';

/** Reconciler of {@link FS_DELETE_EFFECT}: a file that no longer exists was deleted; one that still does was not. */
export const cleanupLogsOperations: Readonly<Record<string, OperationHandlers>> = Object.freeze({
  [FS_DELETE_EFFECT]: {
    async reconcile(operation) {
      try {
        await lstat(operation.target);
        return { status: 'not_applied' };
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        return code === 'ENOENT'
          ? { status: 'confirmed', receipt: { deleted: operation.target } }
          : { status: 'unknown', detail: `cannot check ${operation.target}: ${code ?? 'error'}` };
      }
    },
  },
});

/**
 * The `cleanup_logs` tool, confined to `writableRoots`. Register it only when the operator named writable roots.
 * @throws RangeError when a writable root is not an absolute path or none is given.
 */
export function cleanupLogsTool(options: CleanupLogsOptions): AnyToolDefinition {
  if (options.writableRoots.length === 0) throw new RangeError('cleanup_logs needs at least one writable root');
  const relative = options.writableRoots.find((root) => !root.startsWith('/') && !/^[A-Za-z]:[\\/]/.test(root));
  if (relative !== undefined) throw new RangeError(`writable roots must be absolute paths: ${relative}`);
  const writableRoots = [...options.writableRoots];

  const checkArguments = async (args: z.output<typeof inputSchema>, deniedPaths: readonly string[]): Promise<ConfinedPath> => {
    if (args.include !== undefined) {
      try {
        cleanupSelector(args.include);
      } catch {
        throw new ToolInputError(`include is not a valid glob: ${args.include}`);
      }
    }
    const confined = await resolveConfined(args.path, { roots: writableRoots, deniedPaths });
    const info = await stat(confined.target);
    if (!info.isDirectory() && !info.isFile()) throw new ToolInputError(`path is neither a directory nor a file: ${args.path}`);
    return confined;
  };

  return defineTool({
    name: 'cleanup_logs',
    title: 'Clean up old logs',
    description:
      'Finds rotated and compressed logs (app.log.1, app.log.2.gz, app.log-20240101, syslog.1, *.gz) — never a live *.log — ' +
      'plus files matching include, last modified more than olderThanDays days ago, below a writable root; lists them with ' +
      'size and date and asks for confirmation; then deletes exactly the confirmed files, skipping any that changed since.',
    inputSchema,
    outputSchema,
    // The confirmed list lives in the task's journal; an inline call could not guarantee it.
    execution: 'task-required',
    journaled: true,
    elicits: true,
    operations: cleanupLogsOperations,
    immediateResponse: (args) =>
      `Started looking for rotated logs older than ${args.olderThanDays} days below ${args.path}; the list comes back ` +
      'for confirmation within seconds (a minute for huge trees), and nothing is deleted before it is confirmed.',
    async preflight(args, context) {
      await checkArguments(args, context.deniedPaths);
    },
    async run(args, ctx) {
      const plan = await ctx.step('analyse', async () =>
        planCleanup({
          ...(await checkArguments(args, ctx.deniedPaths)),
          olderThanDays: args.olderThanDays,
          ...(args.include === undefined ? {} : { include: args.include }),
          now: Date.now(),
          signal: ctx.signal,
          onProgress: (done, total) => ctx.progress(done, total, 'checked files'),
        }),
      );
      const base = {
        path: plan.target,
        cutoff: plan.cutoff,
        candidates: plan.candidates.map((file) => ({ path: file.path, size: file.size, modifiedAt: new Date(file.mtimeMs).toISOString() })),
        candidateBytes: plan.totalBytes,
        truncated: plan.truncated,
      };
      if (plan.candidates.length === 0) {
        return textResult(summary(plan, 'nothing-to-delete'), {
          structuredContent: summarized({ ...base, decision: 'nothing-to-delete', deleted: [], skipped: [], freedBytes: 0 }, args.detail, LISTS),
        });
      }
      const decision = decisionOf(await ctx.elicit({ message: confirmationMessage(plan), requestedSchema: CONFIRM_SCHEMA }));
      if (decision !== 'confirmed')
        return textResult(summary(plan, decision), {
          structuredContent: summarized({ ...base, decision, deleted: [], skipped: [], freedBytes: 0 }, args.detail, LISTS),
        });
      ctx.signal.throwIfAborted();
      const report = await deleteConfirmed(plan.candidates, {
        confinement: await confine({ roots: writableRoots, deniedPaths: ctx.deniedPaths }),
        signal: ctx.signal,
        onProgress: (done, total) => ctx.progress(done, total, 'deleted files'),
        through: async (candidate, remove) => {
          const spec = {
            key: `delete:${candidate.path}`,
            effect: FS_DELETE_EFFECT,
            target: candidate.path,
            objectVersion: `${candidate.size}@${candidate.mtimeMs}`,
          };
          try {
            await ctx.operation(spec, async () => {
              await remove().catch((error: unknown) => {
                // Not deleted, provably: the operation is `failed` and the file is reported as skipped.
                throw error instanceof Skipped ? new OperationNotApplied(error.reason) : error;
              });
              return { deleted: candidate.path, size: candidate.size };
            });
          } catch (error) {
            if (error instanceof OperationNotApplied) throw new Skipped(error.message as SkipReason);
            throw error;
          }
        },
      });
      ctx.logger.info({ deleted: report.deleted.length, skipped: report.skipped.length, freedBytes: report.freedBytes }, 'logs cleaned up');
      return textResult(summary(plan, decision, report), { structuredContent: summarized({ ...base, decision, ...report }, args.detail, LISTS) });
    },
  });
}
