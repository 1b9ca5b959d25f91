import { type KillSwitchFallback, KillSwitchInputError, type KillSwitchRecord } from '../core/kill-switch.js';
import { silentLogger } from '../core/logger.js';
import type { TaskStore } from '../core/store.js';
import { AdminInputError, type InFlight, readInFlight } from '../ops/admin.js';
import type { KillSwitchState } from '../ops/rollout/kill-switch.js';
import { KillSwitchCache } from '../ops/rollout/kill-switch.js';
import { createKillSwitchControl } from '../ops/rollout/kill-switch-control.js';
import { type AdminConnection, adminRequest, viaApi } from './admin-client.js';
import type { ResolvedConfig } from './config/resolve.js';
import { writeJson } from './json-output.js';
import { openConfiguredStore, operatorConfig, resolveSettings } from './settings.js';
import { ExitCode, UsageError } from './usage-error.js';

/** Flags of `mcp-tasks admin kill-switch`. */
export interface KillSwitchFlags extends AdminConnection {
  tool?: string;
  fallback?: KillSwitchFallback;
  reason?: string;
  json?: boolean;
}

/** Flags of `mcp-tasks admin watch`. */
export interface WatchFlags extends AdminConnection {
  once?: boolean;
  intervalMs?: number;
  limit?: number;
  timeout?: number;
  json?: boolean;
}

type SwitchAnswer = KillSwitchState & { defaultFallback: KillSwitchFallback; cleared?: boolean };

/** Run `fn` against the configured store (the `--store` form), closing it afterwards. */
async function withStore<T>(resolved: ResolvedConfig, fn: (store: TaskStore, tools: string[], defaultFallback: KillSwitchFallback) => Promise<T>): Promise<T> {
  const settings = await resolveSettings(operatorConfig(resolved));
  const store = await openConfiguredStore(settings);
  try {
    return await fn(
      store,
      settings.tools.map((tool) => tool.name),
      resolved.config.rollout?.fallback ?? 'reject',
    );
  } catch (error) {
    throw error instanceof AdminInputError || error instanceof KillSwitchInputError ? new UsageError(error.message) : error;
  } finally {
    await store.close();
  }
}

function describeSwitch(row: KillSwitchRecord, defaultFallback: KillSwitchFallback): string {
  const scope = row.scope === '*' ? 'every tool' : `tool ${row.scope}`;
  return `  ${scope}: fallback ${row.fallback ?? `${defaultFallback} (default)`}, set by ${row.setBy} at ${new Date(row.setAt).toISOString()}${row.reason ? ` — ${row.reason}` : ''}`;
}

function printSwitch(answer: SwitchAnswer, json: boolean | undefined): void {
  if (json) {
    writeJson(answer);
    return;
  }
  const head = answer.state === 'off' ? 'kill switch: off (task mode on for every tool)' : `kill switch: ${answer.state}`;
  process.stdout.write(`${[head, ...answer.switches.map((row) => describeSwitch(row, answer.defaultFallback))].join('\n')}\n`);
}

/**
 * `mcp-tasks admin kill-switch on|off|status [--tool NAME] [--fallback sync|reject] [--reason TEXT]`: in the store
 * given by `--store`/`--data-dir` (every instance on it sees the change within its refresh, 500 ms by default), or
 * through a server's admin API with `--url` (scope admin:write to change, admin:read for status).
 */
export async function killSwitchCommand(resolved: ResolvedConfig, action: string, flags: KillSwitchFlags): Promise<void> {
  if (!['on', 'off', 'status'].includes(action)) throw new UsageError(`admin kill-switch ${action}: expected on, off or status`);
  if (action !== 'on' && (flags.fallback !== undefined || flags.reason !== undefined)) throw new UsageError('--fallback and --reason go with "on" only');
  if (action === 'status' && flags.tool !== undefined) throw new UsageError('status shows every switch; --tool goes with on and off');
  const { url } = flags;
  if (url !== undefined) {
    const connection = { ...flags, url };
    await viaApi(async () => {
      const answer =
        action === 'status'
          ? await adminRequest<SwitchAnswer>(connection, 'GET', 'kill-switch')
          : action === 'on'
            ? await adminRequest<SwitchAnswer>(connection, 'PUT', 'kill-switch', {
                ...(flags.tool ? { tool: flags.tool } : {}),
                ...(flags.fallback ? { fallback: flags.fallback } : {}),
                ...(flags.reason ? { reason: flags.reason } : {}),
              })
            : await adminRequest<SwitchAnswer>(connection, 'DELETE', `kill-switch${flags.tool ? `?tool=${encodeURIComponent(flags.tool)}` : ''}`);
      printSwitch(answer, flags.json);
    });
    return;
  }
  await withStore(resolved, async (store, tools, defaultFallback) => {
    // The admin API's and the dashboard's control: the same checks, the same `kill_switch` audit entry (by `local`).
    const control = createKillSwitchControl({ store, cache: new KillSwitchCache(store, silentLogger), tools, defaultFallback, logger: silentLogger });
    const answer =
      action === 'on'
        ? await control.turnOn({ tool: flags.tool, fallback: flags.fallback, reason: flags.reason }, 'local')
        : action === 'off'
          ? await control.turnOff(flags.tool, 'local')
          : await control.read();
    printSwitch(answer, flags.json);
  });
}

function printInFlight(inFlight: InFlight, json: boolean | undefined): void {
  if (json) {
    process.stdout.write(`${JSON.stringify({ at: new Date().toISOString(), ...inFlight })}\n`);
    return;
  }
  const lines = [
    `${new Date().toISOString()}  in flight: ${inFlight.tasks.length} task(s), ${inFlight.operations.length} open operation(s)${inFlight.truncated ? ' (more than shown)' : ''}`,
  ];
  for (const task of inFlight.tasks)
    lines.push(
      `  task ${task.taskId}  ${task.status.padEnd(14)} ${task.toolName}  owner=${task.ownerKey}  attempt=${task.attempt}  process=${task.leaseOwner ?? '-'}  since=${new Date(task.createdAt).toISOString()}${task.statusMessage ? `  "${task.statusMessage}"` : ''}`,
    );
  for (const op of inFlight.operations)
    lines.push(`  operation ${op.operationId}  ${op.status.padEnd(8)} ${op.effect} ${op.target}  task=${op.taskId} owner=${op.ownerKey}`);
  if (inFlight.settled) lines.push('  all tasks terminal and no open operations: safe to roll back');
  process.stdout.write(`${lines.join('\n')}\n`);
}

/**
 * `mcp-tasks admin watch`: the rollback watcher. Prints what is still in flight (non-terminal tasks, open domain
 * operations) every `--interval-ms` until all are terminal, then exits 0. `--once`: print once; exit 0 when settled,
 * 1 when something is still in flight. `--timeout`: give up after that many seconds (exit 124).
 */
export async function watchAdminCommand(resolved: ResolvedConfig, flags: WatchFlags): Promise<void> {
  const limit = flags.limit ?? 100;
  const intervalMs = flags.intervalMs ?? 2000;
  const deadline = flags.timeout === undefined ? undefined : Date.now() + flags.timeout * 1000;
  const loop = async (read: () => Promise<InFlight>): Promise<void> => {
    for (;;) {
      const inFlight = await read();
      printInFlight(inFlight, flags.json);
      if (inFlight.settled) return;
      if (flags.once) {
        process.exitCode = 1;
        return;
      }
      if (deadline !== undefined && Date.now() + intervalMs > deadline) {
        process.stderr.write('mcp-tasks: --timeout reached; work is still in flight\n');
        process.exitCode = ExitCode.timedOut;
        return;
      }
      await new Promise((resolveWait) => setTimeout(resolveWait, intervalMs));
    }
  };
  const { url } = flags;
  if (url !== undefined) {
    await viaApi(() => loop(() => adminRequest<InFlight>({ ...flags, url }, 'GET', `in-flight?limit=${limit}`)));
    return;
  }
  await withStore(resolved, (store) => loop(() => readInFlight(store, limit)));
}
