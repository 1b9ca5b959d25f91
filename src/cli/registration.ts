// How a `serve` or `worker` process joins its store at start: the at-rest keys its unfinished tasks need, the
// settings every live process must share, and its registration in the process registry (issue 11 item 6).

import { hostname } from 'node:os';

import { type Logger, redactTaskId } from '../core/logger.js';
import { mayStartOn } from '../core/schema-compatibility.js';
import type { TaskStore } from '../core/store.js';
import { failByRuntime } from '../execution/fail-task.js';
import {
  checkSettingsAgree,
  idsHeldHere,
  InstanceIdTaken,
  type ProcessRegistration,
  registerProcess,
  SettingsDiffer,
} from '../execution/process-registration.js';
import { keysNotConfigured } from '../store/diagnosis.js';
import { AesGcmFieldCipher } from '../store/field-cipher.js';
import type { ResolvedSettings } from './settings.js';
import { StartupError } from './usage-error.js';

/**
 * A process that runs tasks refuses to start while unfinished tasks hold data under an at-rest key it is not
 * configured with (stop 41, a newcomer: a `serve` started in a shell without the key failed such a task for good,
 * and the first process of a restart has no live one to compare its keys with). An API-only `serve --no-worker`
 * starts: through it such tasks can be read, and they expire. With `giveUp` (`--fail-unreadable-tasks`, the
 * operator's decision: the key is lost or withdrawn) it logs what it found and returns those tasks' ids, for the
 * caller to fail once it is registered.
 * @returns the ids of the unfinished tasks with data under a key this process lacks (with `giveUp`; else none).
 * @throws StartupError naming the key ids and how many tasks need each (without `giveUp`).
 */
export async function checkKeysCoverUnfinishedTasks(settings: Pick<ResolvedSettings, 'store' | 'encryption'>, giveUp?: { logger: Logger }): Promise<string[]> {
  const inUse =
    settings.store.kind === 'sqlite'
      ? (await import('../store/sqlite/diagnosis.js')).sqliteUnfinishedByKeyId(settings.store.path)
      : await (await import('../store/postgres/diagnosis.js')).postgresUnfinishedByKeyId(settings.store.url);
  const { encryption } = settings;
  const missing = keysNotConfigured(inUse, AesGcmFieldCipher.keyIdsOf(encryption));
  if (missing.length === 0) return [];
  const one = missing.length === 1 && missing[0]?.taskIds.length === 1;
  const which = missing.map(({ keyId, taskIds }) => `${keyId}: ${taskIds.length} ${taskIds.length === 1 ? 'task' : 'tasks'}`).join(', ');
  const keyIds = missing.length === 1 ? 'key id' : 'key ids';
  if (giveUp) {
    // Whatever of them is sealed (arguments, a question, an answer, a step), no process of this store can read it:
    // they all fail now, before this process takes work, and their requestors are told to call the tool again.
    giveUp.logger.warn(
      { missingKeyIds: missing.map(({ keyId, taskIds }) => ({ keyId, tasks: taskIds.length })) },
      `--fail-unreadable-tasks: unfinished tasks hold data under at-rest ${keyIds} this process is not configured with (${which}); ` +
        `it fails ${one ? 'that task' : 'those tasks'} now (task_unreadable)`,
    );
    return [...new Set(missing.flatMap((entry) => entry.taskIds))];
  }
  throw new StartupError(
    `unfinished tasks hold data under at-rest ${keyIds} this process is not configured with (${which}): ` +
      `it would fail ${one ? 'it' : 'them'} for good (task_unreadable), so it does not start. ` +
      `Set ${missing.length === 1 ? 'that key' : 'those keys'} in MCP_TASKS_ENCRYPTION_KEYS_OLD (${encryption instanceof AesGcmFieldCipher ? 'beside' : 'with'} MCP_TASKS_ENCRYPTION_KEY); ` +
      'to give those tasks up, start with --fail-unreadable-tasks (they fail, their requestors are told to call again), ' +
      'or let them expire (an API process, serve --no-worker, starts and sweeps them)',
  );
}

/** Most default-id slots a host's workers take (`<host>:worker`, then `<host>:worker:slot2` …). */
const MAX_WORKER_SLOTS = 64;

/**
 * Register this `serve` / `worker` process in the store's process registry (issue 11 item 6) under `instanceId`,
 * with the settings digest and heartbeat of `settings`, after checking that every live process of the store has
 * the same settings (whichever started first, see `checkSettingsAgree`). With `slots` (a worker without
 * `--instance-id`), the id is the first free slot of this host: `instanceId`, then `instanceId:slot2`, … — a second
 * worker on the host just runs, and a restarted one reclaims the lowest slot whose process is gone, taking its
 * predecessor's leases over at once. Should another live process take the id over later, this one writes one line
 * and exits 1: two processes must never hold leases under one id.
 * @throws SettingsDiffer, or what `registerProcess` throws (see {@link registrationFailure} for how the CLI reports it).
 */
export async function registerCliProcess(
  store: TaskStore,
  settings: Pick<ResolvedSettings, 'settingsDigest' | 'heartbeatMs' | 'store' | 'encryption'>,
  role: 'serve' | 'api' | 'worker',
  instanceId: string,
  logger: Logger,
  options: { slots?: boolean; failUnreadableTasks?: boolean } = {},
): Promise<ProcessRegistration> {
  const slots = options.slots === true;
  await checkSettingsAgree(store, settings.settingsDigest, role, instanceId, logger);
  const unreadable = role === 'api' ? [] : await checkKeysCoverUnfinishedTasks(settings, options.failUnreadableTasks ? { logger } : undefined);
  const registration = await registerSlot(store, settings, role, instanceId, logger, slots);
  // After registering (the process is live: a peer starting now compares with it) and before any work is taken.
  try {
    // A breaking migration that newer code applied while this process started (after this one opened the store,
    // before it registered) is seen here: that migration's guard counts registered processes only.
    const schema = await store.schemaStatus();
    if (!mayStartOn(schema))
      throw new StartupError(`the task store's schema changed while this process started: task store ${schema.problem ?? `schema version ${schema.applied}`}`);
    for (const taskId of unreadable) {
      const failed = await failByRuntime(store, taskId, 'task_unreadable', UNREADABLE_TASK_MESSAGE, Date.now());
      logger.info({ taskId: redactTaskId(taskId), failed: failed !== undefined }, '--fail-unreadable-tasks: task failed (task_unreadable)');
    }
  } catch (error) {
    // The start fails (the caller closes the store): the registration goes first, not left to lapse.
    await registration.close();
    throw error;
  }
  return registration;
}

/** What the requestor of a task failed by `--fail-unreadable-tasks` reads (no operator advice: see `runTask`). */
const UNREADABLE_TASK_MESSAGE = 'Task stopped: this server cannot decrypt its stored data; call the tool again';

/** The registration of {@link registerCliProcess}, in the first free slot when `slots`. */
async function registerSlot(
  store: TaskStore,
  settings: Pick<ResolvedSettings, 'settingsDigest' | 'heartbeatMs'>,
  role: 'serve' | 'api' | 'worker',
  instanceId: string,
  logger: Logger,
  slots: boolean,
): Promise<ProcessRegistration> {
  const taken = slots ? await idsHeldHere(store) : new Set<string>();
  for (let slot = 1; ; slot++) {
    const id = slot === 1 ? instanceId : `${instanceId}:slot${slot}`;
    if (taken.has(id) && slot < MAX_WORKER_SLOTS) continue; // a live process of this host: the next slot
    try {
      return await registerProcess({
        store,
        instanceId: id,
        role,
        settingsDigest: settings.settingsDigest,
        heartbeatMs: settings.heartbeatMs,
        logger,
        onLost: (holder) => {
          process.stderr.write(`mcp-tasks: instance id ${id} is now held by ${holder}; this ${role === 'worker' ? 'worker' : 'process'} stops\n`);
          process.exit(1);
        },
      });
    } catch (error) {
      // Taken meanwhile by a live process of this very host (the id names the host): try the next slot.
      if (!slots || !(error instanceof InstanceIdTaken) || error.holder.host !== hostname() || slot >= MAX_WORKER_SLOTS) throw error;
    }
  }
}

/**
 * A registration that failed at start as the CLI reports it: a taken instance id or a settings mismatch is one
 * line (exit 1); a store error too.
 */
export function registrationFailure(error: unknown): Error {
  if (error instanceof StartupError) return error;
  if (error instanceof InstanceIdTaken || error instanceof SettingsDiffer) return new StartupError(error.message);
  return new StartupError(`cannot register this process in the task store: ${error instanceof Error ? error.message : String(error)}`);
}
