import type { AuditRecord } from '../core/ledger.js';
import { sinceOf } from './audit.js';
import type { ResolvedConfig } from './config/resolve.js';
import { openConfiguredStore, operatorConfig, resolveSettings } from './settings.js';

/** Flags of `mcp-tasks admin shadow-report` beyond the configuration (the store comes from it). */
export interface ShadowReportFlags {
  since?: string;
  tool?: string;
  json?: boolean;
}

/** Audit entries read per page. */
const PAGE = 1000;

/** One difference as the report shows it. */
export interface ShadowReportEntry {
  at: string;
  tool: string | null;
  taskId: string | null;
  phase: string;
  taskState: string;
  jobState: string;
  jobId: string;
}

function entryOf(record: AuditRecord): ShadowReportEntry {
  const detail = record.detail ?? {};
  return {
    at: new Date(record.at).toISOString(),
    tool: record.tool,
    taskId: record.taskId,
    phase: String(detail.phase),
    taskState: String(detail.taskState),
    jobState: String(detail.jobState),
    jobId: String(detail.jobId),
  };
}

/**
 * `mcp-tasks admin shadow-report`: the differences shadow mode recorded between tasks and the job API they
 * shadow (audit entries of kind `shadow.mismatch`), oldest first, with a count per tool. An operator command: it
 * reads the store directly (`--store`, `--config`, `MCP_TASKS_STORE`).
 */
export async function shadowReport(resolved: ResolvedConfig, flags: ShadowReportFlags): Promise<void> {
  const since = flags.since === undefined ? undefined : sinceOf(flags.since);
  const settings = await resolveSettings(operatorConfig(resolved));
  const store = await openConfiguredStore(settings);
  const entries: ShadowReportEntry[] = [];
  try {
    for (let afterSeq = 0; ;) {
      const page = await store.listAudit({
        kind: 'shadow.mismatch',
        afterSeq,
        limit: PAGE,
        ...(since === undefined ? {} : { since }),
        ...(flags.tool ? { tool: flags.tool } : {}),
      });
      entries.push(...page.map(entryOf));
      if (page.length < PAGE) break;
      afterSeq = (page.at(-1) as AuditRecord).seq;
    }
  } finally {
    await store.close();
  }
  const byTool: Record<string, number> = {};
  for (const entry of entries) byTool[entry.tool ?? '-'] = (byTool[entry.tool ?? '-'] ?? 0) + 1;
  const sinceText = since === undefined ? 'ever' : new Date(since).toISOString();
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ since: since === undefined ? null : sinceText, mismatches: entries.length, byTool, entries })}\n`);
    return;
  }
  const counts = Object.entries(byTool)
    .map(([tool, count]) => `${tool}: ${count}`)
    .join(', ');
  const lines = entries.map((entry) =>
    [
      entry.at,
      `tool=${entry.tool ?? '-'}`,
      `task=${entry.taskId ?? '-'}`,
      `job=${entry.jobId}`,
      entry.phase.padEnd(7),
      `task ${entry.taskState}, job ${entry.jobState}`,
    ].join('  '),
  );
  process.stdout.write(`shadow mismatches since ${sinceText}: ${entries.length}${counts ? ` (${counts})` : ''}\n${lines.map((line) => `${line}\n`).join('')}`);
}
