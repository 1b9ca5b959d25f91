import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

import { gonePredecessor, pidAlive } from '../core/local-process.js';
import type { Logger } from '../core/logger.js';
import type { TaskLeases } from '../core/ports/leases.js';
import type { ProcessRegistry } from '../core/ports/processes.js';
import { type NewProcessEntry, type ProcessRecord, type ProcessRole, settingsDifference, settingsVersionGap } from '../core/process-record.js';
import { settledWithin } from '../core/settled-within.js';

/** Options of {@link registerProcess}. */
export interface ProcessRegistrationOptions {
  /** The registry, and the leases a predecessor under the same id still holds (released at registration). */
  store: ProcessRegistry & Pick<TaskLeases, 'releaseLeasesOf'>;
  /** Stable id: the lease owner of this process's runs. */
  instanceId: string;
  role: ProcessRole;
  /** See `settingsDigest`. */
  settingsDigest: string;
  /** Heartbeat interval (ms); the registration lapses after three missed beats. */
  heartbeatMs: number;
  logger: Logger;
  /** Another live process holds this id now (this one's registration lapsed meanwhile): the caller must stop. */
  onLost(holder: string): void;
}

/** A process's registration (see {@link registerProcess}). */
export interface ProcessRegistration {
  readonly instanceId: string;
  /** Tasks whose leases a predecessor under the same id still held, released at registration for this process's recovery. */
  readonly takenOver: readonly string[];
  /**
   * Record in the registry that this process drains (it finishes or hands back its runs and takes no new task), so
   * `doctor` and the API processes no longer count it as a worker that takes tasks. Call when the drain starts; the
   * heartbeat goes on until {@link close}, and a registration made again meanwhile is marked again. Never throws: a
   * mark that cannot be written is logged, and the drain goes on (the registration still goes at close).
   */
  markDraining(): Promise<void>;
  /** Stop the heartbeat and remove the registration (a clean stop; leases were released by the drain). */
  close(): Promise<void>;
}

/** Why a process may not start under its instance id; the CLI prints the message as one line (exit 1). */
export class InstanceIdTaken extends Error {
  override readonly name = 'InstanceIdTaken';
  constructor(readonly holder: ProcessRecord) {
    super(
      `instance id ${holder.instanceId} is held by a live ${holder.role} process (host ${holder.host}, pid ${holder.pid}, its registration lapses ${Math.max(0, holder.expiresAt - holder.heartbeatAt)} ms after its last heartbeat); ` +
        'give this process another --instance-id, or stop that one',
    );
  }
}

/** Heartbeats a registration may miss before it lapses. */
const MISSED_BEATS = 3;
/** How much later than one beat a holder's heartbeat is looked at again: room for a beat that fires a little late (ms). */
const BEAT_SLACK_MS = 250;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Register this process in the store's process registry (issue 11 item 6) and keep its heartbeat; after every beat
 * that kept it live it also reaps (apart: the heartbeat never waits for it) the other processes whose heartbeat
 * lapsed, releasing all their leases at once (a `released` event wakes every worker's recovery). A live process under the same id refuses this one — except a predecessor known dead: on this
 * host with a pid that no longer runs (or is this very pid: a container restarted as pid 1); one on another host is
 * given one heartbeat lifetime to prove it lives. Once registered, every lease still held under the id is released,
 * so a worker started next takes its predecessor's tasks over at once instead of a lease later.
 * @throws InstanceIdTaken when a live process holds the id.
 */
export async function registerProcess(options: ProcessRegistrationOptions): Promise<ProcessRegistration> {
  const { store, instanceId, logger } = options;
  const ttlMs = options.heartbeatMs * MISSED_BEATS;
  const entry: NewProcessEntry = {
    instanceId,
    role: options.role,
    token: randomBytes(12).toString('hex'),
    host: hostname(),
    pid: process.pid,
    settingsDigest: options.settingsDigest,
  };
  let result = await store.registerProcess(entry, ttlMs);
  if (!result.registered) {
    const { holder } = result;
    const deadHere = gonePredecessor(holder);
    if (deadHere) {
      result = await store.registerProcess(entry, ttlMs, holder.token);
    } else {
      // Alive only if it keeps beating: looked at again one beat later, a holder whose heartbeat moved is alive and the
      // id is refused then (it took a whole heartbeat lifetime, ~4 s at the defaults, every time). One that did not
      // beat gets the rest of its lifetime, after which the store replaces a lapsed row.
      const lifetimeMs = Math.max(0, holder.expiresAt - holder.heartbeatAt) + options.heartbeatMs;
      const firstLookMs = Math.min(lifetimeMs, options.heartbeatMs + BEAT_SLACK_MS);
      await sleep(firstLookMs);
      result = await store.registerProcess(entry, ttlMs);
      const beatSince = !result.registered && (result.holder.token !== holder.token || result.holder.heartbeatAt > holder.heartbeatAt);
      if (!result.registered && !beatSince && lifetimeMs > firstLookMs) {
        await sleep(lifetimeMs - firstLookMs);
        result = await store.registerProcess(entry, ttlMs);
      }
    }
    if (!result.registered) throw new InstanceIdTaken(result.holder);
  }
  const takenOver = await store.releaseLeasesOf(instanceId);
  if (result.previous || takenOver.length > 0) {
    // `leasesReleased` counts only the leases still live at takeover: a task whose lease had lapsed already (the restart
    // took longer than the lease) is recovered all the same, so the count is named for what it is, not "tasks".
    logger.info(
      { instanceId, previousPid: result.previous?.pid, leasesReleased: takenOver.length },
      'took over from the previous process under this instance id; its unfinished tasks are recovered next',
    );
  }
  let beating: Promise<boolean> | undefined;
  let reaping: Promise<void> | undefined;
  let marking: Promise<void> | undefined;
  let closed = false;
  let draining = false;
  /** Whether this registration's draining mark is written (a failed or refused mark is written again by a beat). */
  let marked = false;
  const mark = (): Promise<void> =>
    (marking ??= store
      .markProcessDraining(instanceId, entry.token)
      .then(
        (held) => {
          marked = held;
          // Reaped meanwhile (a stall longer than three beats): the next beat registers again and marks that one.
          if (!held && !closed) logger.warn({ instanceId }, 'could not mark this process draining: its registration had lapsed; marked again once registered');
        },
        (error: unknown) =>
          logger.warn(
            { err: error },
            'marking this process draining failed; retrying at the next beat (until then doctor and the API processes count it as taking tasks)',
          ),
      )
      .finally(() => (marking = undefined)));
  const beat = (): Promise<boolean> => (beating ??= beatOnce().finally(() => (beating = undefined)));
  // The reap is a write of the batch, the heartbeat a statement outside it: the reap runs apart, so a batch stalled on
  // a row lock (up to the statement timeout) holds the reap up but never the next heartbeats — a beat that awaited it
  // sent none meanwhile, and the registration lapsed after three beats (issue 25). It never reaps this process (a
  // reap that waited behind a stalled batch, or one sent while this process's heartbeats failed, would release the
  // leases of the runs it still has), and it starts only after a beat that kept this registration live.
  const reap = (): Promise<void> => (reaping ??= reapOnce().finally(() => (reaping = undefined)));
  /** One heartbeat; `true` when this registration is live after it. */
  const beatOnce = async (): Promise<boolean> => {
    try {
      // Closing: the deregistration may have landed first (a heartbeat is a statement of its own, not queued with the
      // process's other writes), and registering again would leave a row behind for one TTL.
      if (!(await store.heartbeatProcess(instanceId, entry.token, ttlMs)) && !closed) {
        // The registration lapsed and was reaped (this process or the store stalled for longer than the TTL; its
        // leases were released then): register again, unless another live process holds the id now.
        const again = await store.registerProcess(entry, ttlMs);
        if (!again.registered) {
          clearInterval(timer);
          options.onLost(`${again.holder.role} pid ${again.holder.pid} on ${again.holder.host}`);
          return false;
        }
        logger.warn({ instanceId }, "this process's registration had lapsed (its leases were released); registered again");
        // The new registration has no mark of its own: a draining process must not count as taking tasks again.
        marked = false;
      }
      // A mark that failed (the store blipped at SIGTERM) is written again, not left for the whole drain.
      if (draining && !marked && !closed) await mark();
      return !closed;
    } catch (error) {
      logger.warn({ err: error }, 'process heartbeat failed; retrying at the next beat');
      return false;
    }
  };
  const reapOnce = async (): Promise<void> => {
    try {
      const reaped = await store.reapLapsedProcesses(instanceId);
      if (reaped.instanceIds.length > 0)
        logger.warn({ instanceIds: reaped.instanceIds, tasks: reaped.taskIds.length }, 'processes stopped heartbeating; their leases were released');
    } catch (error) {
      logger.warn({ err: error }, 'reaping lapsed processes failed; retrying at the next beat');
    }
  };
  const timer = setInterval(() => {
    void beat().then((live) => {
      if (live && !closed) void reap();
    });
  }, options.heartbeatMs);
  timer.unref();
  return {
    instanceId,
    takenOver,
    async markDraining() {
      if (draining || closed) return;
      draining = true;
      await mark();
    },
    async close() {
      clearInterval(timer);
      closed = true;
      // A beat (or a draining mark) in flight ends before the deregistration is sent, so the registration's row is
      // gone when close ends, and a reap in flight ends before the caller closes the store under it — all waited for
      // one registration lifetime at most (a beat stuck on a frozen database must not hold the shutdown; what it might
      // still write then lapses within that lifetime).
      const inFlight = [beating, reaping, marking].filter((work) => work !== undefined);
      if (inFlight.length > 0) await settledWithin(Promise.all(inFlight), ttlMs);
      await store
        .deregisterProcess(instanceId, entry.token)
        .catch((error: unknown) => logger.warn({ err: error }, 'deregistering failed; the registration lapses on its own'));
    },
  };
}

/**
 * The instance ids held by live processes of this host whose pid still runs (other than this process): ids a new
 * process here cannot take, known without waiting for a heartbeat.
 */
export async function idsHeldHere(store: ProcessRegistry): Promise<Set<string>> {
  const here = hostname();
  const processes = await store.listProcesses();
  return new Set(processes.filter((p) => p.live && p.host === here && p.pid !== process.pid && pidAlive(p.pid)).map((p) => p.instanceId));
}

/** Why a process may not start: a live process of the store runs with other settings (see {@link checkSettingsAgree}). */
export class SettingsDiffer extends Error {
  override readonly name = 'SettingsDiffer';
  constructor(
    readonly other: ProcessRecord,
    /** The fields of the settings digest that differ (e.g. `checkTargets`). */
    readonly fields: readonly string[],
    role: ProcessRole,
    /** This process's own settings digest, shown beside the other's. */
    own: string,
  ) {
    super(
      `settings differ from live ${other.role} process ${other.instanceId} in: ${fields.join(', ')} ` +
        `(its digest ${other.settingsDigest}; this one's ${own}); every process of a store must agree on roots, writable roots, tools and their policies, check targets, run limits, TTLs, result sizes and the at-rest keys (MCP_TASKS_ENCRYPTION_KEY and MCP_TASKS_ENCRYPTION_KEYS_OLD) — ` +
        `this ${role} does not start (mcp-tasks doctor lists the digests)`,
    );
  }
}

/**
 * Refuse a process whose settings digest differs from any live process's on the same store — API or worker, started
 * before or after it: a worker would run tools with other roots, targets, limits or keys than an API process
 * promised, whichever of them started first. Run at start, before registering. Settings that only one of the two
 * versions knows (a rolling update from a version whose digest lacks a field) are not compared: `logger` is told
 * which, once per process, and the check covers them again once every process runs the newer version.
 * @throws SettingsDiffer naming the first such process and the differing fields.
 */
export async function checkSettingsAgree(
  store: ProcessRegistry,
  settingsDigest: string,
  role: ProcessRole,
  instanceId: string,
  logger?: Logger,
): Promise<void> {
  for (const other of await store.listProcesses()) {
    if (!other.live || other.instanceId === instanceId) continue; // its own predecessor is taken over, not compared
    const fields = settingsDifference(other.settingsDigest, settingsDigest);
    if (fields.length > 0) throw new SettingsDiffer(other, fields, role, settingsDigest);
    const gap = settingsVersionGap(other.settingsDigest, settingsDigest);
    if (gap.length > 0)
      logger?.warn(
        { otherInstanceId: other.instanceId, fields: gap },
        'a live process runs another version: these settings are known to only one of the two and not compared until every process runs the same version',
      );
  }
}
