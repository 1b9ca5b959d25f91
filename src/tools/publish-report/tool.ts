/**
 * The `publish_report` tool: writes a report into a git repository below a writable root and commits it with an
 * `Operation-Id: <id>` trailer, through the operation ledger (`ctx.operation`), so a re-run after a crash never
 * commits twice: the reconciler searches the history for the trailer (issue 12). The report is given as `content`
 * or taken from another task of the caller (`fromTask`: the task service resolves it, with the owner check, before
 * the run; the tool never reads the store).
 */
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, normalize, relative, sep } from 'node:path';

import { z } from 'zod';

import type { JsonObject } from '../../core/task.js';
import { type AnyToolDefinition, defineTool, localPath, type OperationHandlers, OperationNotApplied, textResult, ToolInputError } from '../../core/tool.js';
import { resolveConfined } from '../roots.js';
import { commitOfOperation, git, GitError, headOf, OPERATION_TRAILER } from './git.js';
import { reportFromResult } from './report.js';

/** Largest report written, in bytes of UTF-8. */
export const MAX_REPORT_BYTES = 1024 * 1024;

/** The effect `publish_report` declares (a key of {@link publishReportOperations}). */
export const GIT_COMMIT_EFFECT = 'git.commit';

const inputSchema = z
  .object({
    repo: localPath(z.string().min(1).describe('A git repository (its work tree) inside a writable root.')),
    path: z.string().min(1).max(4096).describe('Where the report goes: relative to the repository (e.g. reports/errors.md), or absolute inside it.'),
    content: z.string().optional().describe('The report text (Markdown). Give this or fromTask.'),
    fromTask: z.string().min(1).max(64).optional().describe('A completed task of yours (e.g. analyze_logs) whose result becomes the report.'),
    message: z.string().min(1).max(200).optional().describe('Commit subject (default: "Publish <path>").'),
  })
  .refine((args) => (args.content === undefined) !== (args.fromTask === undefined), 'give exactly one of content and fromTask');

const outputSchema = z.object({
  repo: z.string(),
  path: z.string(),
  commit: z.string(),
  operationId: z.string(),
  replayed: z.boolean(),
  bytes: z.number().int(),
});

/**
 * The report's path relative to the repository: given relative to it, or absolute inside it (`mcp-tasks call` makes a
 * typed relative `path` absolute against the current directory). It must stay in the work tree and out of `.git`.
 * @throws ToolInputError
 */
function reportPath(repo: string, path: string): string {
  const normalized = isAbsolute(path) ? relative(repo, path) : normalize(path);
  if (isAbsolute(normalized) || normalized.split(sep).includes('..')) throw new ToolInputError(`path must be inside the repository: ${path}`);
  if (normalized.split(sep)[0] === '.git' || normalized === '.') throw new ToolInputError(`path must name a file outside .git: ${path}`);
  return normalized;
}

/** The repository's work tree (confined to the writable roots) and that it is one. @throws ToolInputError */
async function repositoryOf(repo: string, writableRoots: readonly string[], deniedPaths: readonly string[]): Promise<string> {
  const { target } = await resolveConfined(repo, { roots: writableRoots, deniedPaths });
  const info = await stat(target).catch(() => undefined);
  if (!info?.isDirectory()) throw new ToolInputError(`repo is not a directory: ${repo}`);
  const top = (await git(target, ['rev-parse', '--show-toplevel']).catch(() => '')).trim();
  if (top === '') throw new ToolInputError(`repo is not a git work tree: ${repo}`);
  return target;
}

/** How often a commit refused for another git's lock is tried again, and the pause between tries (ms). */
const LOCK_RETRIES = 40;
const LOCK_PAUSE_MS = 100;

/**
 * `git add` + `git commit`, both tried again while another git process gets in the way ({@link GitError.locked}: git
 * stopped before the history changed, so a retry is safe). Still contended after every try: {@link OperationNotApplied}.
 * Exported for its concurrency test.
 */
export async function commitWithRetry(repo: string, commit: readonly string[], path: string, signal: AbortSignal): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await git(repo, ['add', '--', path], signal);
      await git(repo, commit, signal);
      return;
    } catch (error) {
      if (!(error instanceof GitError && error.locked)) throw error;
      if (attempt >= LOCK_RETRIES) throw new OperationNotApplied(error.message);
      await new Promise((resolve) => setTimeout(resolve, LOCK_PAUSE_MS * (0.5 + Math.random())));
      signal.throwIfAborted();
    }
  }
}

/** Reconciler of {@link GIT_COMMIT_EFFECT}: the commit that carries the operation's trailer, or none. */
export function publishReportOperations(writableRoots: readonly string[]): Readonly<Record<string, OperationHandlers>> {
  return Object.freeze({
    [GIT_COMMIT_EFFECT]: {
      async reconcile(operation) {
        // The target was confined when the operation was opened; it is checked again (roots may have changed).
        const repo = await repositoryOf(operation.target, writableRoots, []).catch((error: unknown) => error as Error);
        if (repo instanceof Error) return { status: 'unknown', detail: `repository unavailable: ${repo.message}` };
        const commit = await commitOfOperation(repo, operation.operationId);
        return commit ? { status: 'confirmed', receipt: { commit, repo } } : { status: 'not_applied' };
      },
    },
  });
}

/**
 * The `publish_report` tool, confined to `writableRoots` (register it only with a writable root).
 * @throws RangeError when no writable root is given.
 */
export function publishReportTool(options: { writableRoots: readonly string[] }): AnyToolDefinition {
  if (options.writableRoots.length === 0) throw new RangeError('publish_report needs at least one writable root');
  const writableRoots = [...options.writableRoots];
  return defineTool({
    name: 'publish_report',
    title: 'Publish a report to git',
    description:
      'Writes a report (content, or the result of one of your completed tasks via fromTask) to a file in a git repository ' +
      'inside a writable root and commits it with an Operation-Id trailer. Exactly once: a retry or a re-run after a crash ' +
      'finds the commit instead of making a second one.',
    inputSchema,
    outputSchema,
    execution: 'task-required',
    // Its one effect goes through ctx.operation, which reconciles before any second commit.
    journaled: true,
    resolvesTasks: ['fromTask'],
    operations: publishReportOperations(writableRoots),
    async preflight(args, context) {
      if (args.content !== undefined && Buffer.byteLength(args.content) > MAX_REPORT_BYTES)
        throw new ToolInputError(`content is larger than ${MAX_REPORT_BYTES} bytes`);
      reportPath(await repositoryOf(args.repo, writableRoots, context.deniedPaths), args.path);
    },
    async run(args, ctx) {
      // Only confined here: whether it is a repository is the effect's business, so a re-run after a crash reaches
      // the ledger (and reconciles) even when the repository is gone meanwhile.
      const { target: repo } = await resolveConfined(args.repo, { roots: writableRoots, deniedPaths: ctx.deniedPaths });
      const path = reportPath(repo, args.path);
      const content = args.content ?? reportFromResult(args.fromTask as string, (ctx.gathered as JsonObject | undefined)?.fromTask);
      if (Buffer.byteLength(content) > MAX_REPORT_BYTES) throw new ToolInputError(`the report is larger than ${MAX_REPORT_BYTES} bytes`);
      const subject = args.message ?? `Publish ${path}`;
      const head = await headOf(repo);
      ctx.setStatus(`committing ${path}`);
      const done = await ctx.operation(
        { key: `publish:${path}`, effect: GIT_COMMIT_EFFECT, target: repo, ...(head ? { objectVersion: head } : {}) },
        async (operationId) => {
          await repositoryOf(repo, writableRoots, ctx.deniedPaths).catch((error: unknown) => {
            throw error instanceof ToolInputError ? new OperationNotApplied(error.message) : error;
          });
          const file = join(repo, path);
          await mkdir(dirname(file), { recursive: true });
          await writeFile(file, content);
          await commitWithRetry(
            repo,
            ['commit', '--allow-empty', '-q', '-m', subject, '-m', `${OPERATION_TRAILER}: ${operationId}`, '--', path],
            path,
            ctx.signal,
          );
          const commit = await commitOfOperation(repo, operationId);
          if (!commit) throw new Error('the commit was made but carries no Operation-Id trailer');
          return { commit, repo };
        },
      );
      const commit = String(done.receipt.commit);
      return textResult(
        `${done.replayed ? 'Already published' : 'Published'} ${path} in ${repo} as commit ${commit.slice(0, 12)} (operation ${done.operationId}).`,
        {
          structuredContent: { repo, path, commit, operationId: done.operationId, replayed: done.replayed, bytes: Buffer.byteLength(content) },
        },
      );
    },
  });
}
