import type { AuditRecord } from '../core/ledger.js';
import { type AdminConnection, adminRequest, viaApi } from './admin-client.js';
import type { ResolvedConfig } from './config/resolve.js';
import { openConfiguredStore, operatorConfig, resolveSettings } from './settings.js';
import { UsageError } from './usage-error.js';

/** Flags of `mcp-tasks audit` beyond the configuration (the store comes from it). */
export interface AuditFlags extends AdminConnection {
  since?: string;
  tool?: string;
  owner?: string;
  limit?: number;
  json?: boolean;
}

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--since`: an ISO 8601 time, or a duration ago (`30m`, `24h`, `7d`). @throws UsageError */
export function sinceOf(value: string, now = Date.now()): number {
  const ago = /^(\d+)([smhd])$/.exec(value);
  if (ago) return now - Number(ago[1]) * (UNITS[ago[2] as string] as number);
  const at = Date.parse(value);
  if (Number.isNaN(at)) throw new UsageError(`--since ${value}: expected an ISO 8601 time or a duration such as 30m, 24h, 7d`);
  return at;
}

function line(entry: AuditRecord): string {
  const fields = [new Date(entry.at).toISOString(), entry.kind.padEnd(14), entry.outcome ?? '-', `owner=${entry.ownerKey}`];
  if (entry.tool) fields.push(`tool=${entry.tool}`);
  if (entry.taskId) fields.push(`task=${entry.taskId}`);
  if (entry.scopes) fields.push(`scopes="${entry.scopes}"`);
  if (entry.argumentsDigest) fields.push(`args=sha256:${entry.argumentsDigest}`);
  if (entry.detail) fields.push(JSON.stringify(entry.detail));
  return fields.join('  ');
}

/** `mcp-tasks audit`: the audit trail, oldest first (an operator command: it reads the store directly). */
export async function auditCommand(resolved: ResolvedConfig, flags: AuditFlags): Promise<void> {
  const since = flags.since === undefined ? undefined : sinceOf(flags.since);
  const print = (entries: AuditRecord[]): void => {
    process.stdout.write(
      flags.json
        ? entries.map((entry) => JSON.stringify(entry)).join('\n') + (entries.length ? '\n' : '')
        : entries.length === 0
          ? 'no audit entries\n'
          : `${entries.map(line).join('\n')}\n`,
    );
  };
  if (flags.url !== undefined) {
    const query = new URLSearchParams({
      limit: String(flags.limit ?? 1000),
      ...(since === undefined ? {} : { since: String(since) }),
      ...(flags.tool ? { tool: flags.tool } : {}),
      ...(flags.owner ? { owner: flags.owner } : {}),
    });
    await viaApi(() =>
      adminRequest<{ entries: AuditRecord[] }>({ ...flags, url: flags.url as string }, 'GET', `audit?${query}`).then((answer) => print(answer.entries)),
    );
    return;
  }
  const settings = await resolveSettings(operatorConfig(resolved));
  const store = await openConfiguredStore(settings);
  try {
    const entries = await store.listAudit({
      ...(since === undefined ? {} : { since }),
      ...(flags.tool ? { tool: flags.tool } : {}),
      ...(flags.owner ? { ownerKey: flags.owner } : {}),
      limit: flags.limit ?? 1000,
    });
    print(entries);
  } finally {
    await store.close();
  }
}
