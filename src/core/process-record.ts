/**
 * The process registry's rows (issue 11 item 6): every API and worker process of a deployment registers under its
 * instance id with a heartbeat. The store judges liveness on its own clock, like leases.
 */

/** What a process is: `serve` (API and embedded worker), `api` (`serve --no-worker`) or `worker`. */
export type ProcessRole = 'serve' | 'api' | 'worker';

/** A process as it registers. */
export interface NewProcessEntry {
  /** Stable id (`--instance-id`); also the lease owner of its runs. */
  instanceId: string;
  role: ProcessRole;
  /** Random per start: tells this run of the process from an earlier one under the same id. */
  token: string;
  /** Host name and process id, to tell a dead predecessor on the same host from a live duplicate. */
  host: string;
  pid: number;
  /** Digest of the settings that must agree across a deployment (see `settingsDigest`). */
  settingsDigest: string;
}

/** A registered process. Times are epoch ms on the store's clock. */
export interface ProcessRecord extends NewProcessEntry {
  startedAt: number;
  heartbeatAt: number;
  /** The heartbeat lapses here; then the process counts as gone and its leases are released. */
  expiresAt: number;
  /** `expiresAt` is still ahead on the store's clock at the time of the read. */
  live: boolean;
}

/**
 * How {@link TaskStore.registerProcess} ended: registered (replacing `previous`, a lapsed or named row of the same
 * id, if any), or refused because a live process with another token holds the id.
 */
export type RegisterProcessResult = { registered: true; previous: ProcessRecord | undefined } | { registered: false; holder: ProcessRecord };
