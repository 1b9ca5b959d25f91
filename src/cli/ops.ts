import { OPEN_OPERATION_STATUSES, type OperationRecord, type OperationStatus } from '../core/ledger.js';
import { reconcileStored } from '../ledger/operations.js';
import { type AdminConnection, adminRequest, viaApi } from './admin-client.js';
import type { ResolvedConfig } from './config/resolve.js';
import { jsonDocument, writeJson } from './json-output.js';
import { openConfiguredStore, operatorConfig, resolveSettings } from './settings.js';
import { UsageError } from './usage-error.js';

/** Flags of `mcp-tasks ops …` beyond the configuration (store and tools come from it): filters and output. */
export interface OpsFlags extends AdminConnection {
  json?: boolean;
  owner?: string;
  task?: string;
  status?: string;
  all?: boolean;
  limit?: number;
}

const STATUSES: readonly OperationStatus[] = ['pending', 'confirmed', 'failed', 'unknown'];

/** One line of `ops list`. */
function line(op: OperationRecord): string {
  const receipt = op.receipt ? ` receipt=${JSON.stringify(op.receipt)}` : '';
  return `${op.operationId}  ${op.status.padEnd(9)} ${op.effect}  ${op.target}  task=${op.taskId} tool=${op.toolName} owner=${op.ownerKey} at=${new Date(op.updatedAt).toISOString()}${receipt}${op.detail ? `  (${op.detail})` : ''}`;
}

/** Run `fn` with the configured store, closing it afterwards. */
async function withStore<T>(
  resolved: ResolvedConfig,
  fn: (settings: Awaited<ReturnType<typeof resolveSettings>>, store: Awaited<ReturnType<typeof openConfiguredStore>>) => Promise<T>,
): Promise<T> {
  const settings = await resolveSettings(operatorConfig(resolved));
  const store = await openConfiguredStore(settings);
  try {
    return await fn(settings, store);
  } finally {
    await store.close();
  }
}

/**
 * `mcp-tasks ops list`: the open operations (`pending`, `unknown`) of the store, or those of `--status`/`--all`,
 * narrowed to `--owner` and `--task`. An operator command: it reads the store directly.
 */
export async function opsList(resolved: ResolvedConfig, flags: OpsFlags): Promise<void> {
  const statuses = flags.all ? undefined : flags.status === undefined ? OPEN_OPERATION_STATUSES : flags.status.split(',');
  for (const status of statuses ?? [])
    if (!STATUSES.includes(status as OperationStatus)) throw new UsageError(`--status ${status}: expected ${STATUSES.join(', ')}`);
  const print = (ops: OperationRecord[]): void => {
    if (flags.json) writeJson(ops);
    else process.stdout.write(ops.length === 0 ? 'no operations\n' : `${ops.map(line).join('\n')}\n`);
  };
  if (flags.url !== undefined) {
    const query = new URLSearchParams({
      status: statuses ? statuses.join(',') : 'all',
      limit: String(flags.limit ?? 100),
      ...(flags.owner ? { owner: flags.owner } : {}),
      ...(flags.task ? { task: flags.task } : {}),
    });
    await viaApi(() =>
      adminRequest<{ operations: OperationRecord[] }>({ ...flags, url: flags.url as string }, 'GET', `operations?${query}`).then((answer) =>
        print(answer.operations),
      ),
    );
    return;
  }
  await withStore(resolved, async (_settings, store) => {
    const ops = await store.listOperations({
      ...(flags.owner ? { ownerKey: flags.owner } : {}),
      ...(flags.task ? { taskId: flags.task } : {}),
      ...(statuses ? { statuses: statuses as OperationStatus[] } : {}),
      limit: flags.limit ?? 100,
    });
    print(ops);
  });
}

/** The operation, when it exists and (with `--owner`) is that owner's; otherwise exit code 4 and `undefined`. */
async function ownOperation(
  store: { getOperation(id: string): Promise<OperationRecord | undefined> },
  operationId: string,
  flags: OpsFlags,
): Promise<OperationRecord | undefined> {
  const op = await store.getOperation(operationId);
  if (op && (!flags.owner || op.ownerKey === flags.owner)) return op;
  process.stderr.write(`mcp-tasks: no operation ${operationId}\n`);
  process.exitCode = 4;
  return undefined;
}

/** `mcp-tasks ops show <operationId>`; exit code 4 when unknown. */
export async function opsShow(resolved: ResolvedConfig, operationId: string, flags: OpsFlags): Promise<void> {
  await withStore(resolved, async (_settings, store) => {
    const op = await ownOperation(store, operationId, flags);
    if (op) process.stdout.write(flags.json ? jsonDocument(op) : `${line(op)}\n`);
  });
}

/**
 * `mcp-tasks ops reconcile <operationId>`: ask the tool's reconciler (the tools loaded from the same flags as
 * `serve`) and record what the system of record says. Exit 0 confirmed or not applied, 8 still unknown, 4 no such
 * operation.
 */
export async function opsReconcile(resolved: ResolvedConfig, operationId: string, flags: OpsFlags): Promise<void> {
  await withStore(resolved, async (settings, store) => {
    if (!(await ownOperation(store, operationId, flags))) return;
    const report = await reconcileStored(store, (tool) => settings.tools.find((t) => t.name === tool)?.operations, operationId, Date.now());
    if (!report) return;
    if (flags.json) writeJson(report);
    else process.stdout.write(`${report.verdict.status}${report.changed ? '' : ' (unchanged)'}: ${line(report.operation)}\n`);
    if (report.verdict.status === 'unknown') process.exitCode = 8;
  });
}
