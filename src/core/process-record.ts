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
  /**
   * When this process began to drain (SIGTERM: it finishes or hands back its runs and takes no new task), epoch ms
   * on the store's clock; `null` while it takes work — and for a process of a version before draining was recorded.
   */
  drainingSince: number | null;
}

/**
 * Whether `process` takes new tasks now: live, a role that runs tasks (`worker`, or `serve` with its embedded
 * worker — not `api`), and not draining. The one rule behind `doctor`'s tasks line and an API process's worker
 * presence (its `/readyz` and the "waiting for a worker" status), so they never disagree about a draining worker.
 */
export function takesTasks(process: ProcessRecord): boolean {
  return process.live && process.role !== 'api' && process.drainingSince === null;
}

/** Whether `process` is a live worker (or `serve` with one) that drains: it finishes or hands back its runs, takes none. */
export function drainingWorker(process: ProcessRecord): boolean {
  return process.live && process.role !== 'api' && process.drainingSince !== null;
}

/**
 * How {@link TaskStore.registerProcess} ended: registered (replacing `previous`, a lapsed or named row of the same
 * id, if any), or refused because a live process with another token holds the id.
 */
export type RegisterProcessResult = { registered: true; previous: ProcessRecord | undefined } | { registered: false; holder: ProcessRecord };

/**
 * A settings digest by field (issue 26 item 7): `roots=1a2b3c4d tools=… checkTargets=…`, each value the first 8 hex
 * digits of SHA-256 over that field's canonical JSON, so two processes that disagree can be told *which* setting
 * differs without either revealing its value. Fields are written in the order given.
 */
export function composeSettingsDigest(fields: Readonly<Record<string, unknown>>, hash: (text: string) => string): string {
  return Object.entries(fields)
    .map(([name, value]) => `${name}=${hash(JSON.stringify(value)).slice(0, 8)}`)
    .join(' ');
}

/** A digest by field as a map (field → hash), or `undefined` for a digest of another shape (an older single hash). */
function digestFields(digest: string): Map<string, string> | undefined {
  const pairs = digest.split(' ').map((pair) => pair.split('='));
  return pairs.every((pair) => pair.length === 2 && pair[0] !== '') ? new Map(pairs as Array<[string, string]>) : undefined;
}

/**
 * The fields in which two settings digests differ (see {@link composeSettingsDigest}), in the order of `a`: only
 * fields both digests have. A field only one of them has is a version difference, not a settings difference (see
 * {@link settingsVersionGap}): during a rolling update the processes of the older version do not know a setting the
 * newer one added, and refusing the newer ones would stall the update. A digest of another shape (a version before
 * digests by field) differs as a whole: `['(all settings: a process of another version)']`. Empty when they agree.
 */
export function settingsDifference(a: string, b: string): string[] {
  if (a === b) return [];
  const left = digestFields(a);
  const right = digestFields(b);
  if (!left || !right) return ['(all settings: a process of another version)'];
  return [...left.keys()].filter((name) => right.has(name) && left.get(name) !== right.get(name));
}

/**
 * The fields only one of two digests by field has (those of `a` first): the processes run different versions, and
 * these settings cannot be compared until every process runs the newer one. Empty when both have the same fields or
 * either digest is of another shape (then {@link settingsDifference} reports the whole digest).
 */
export function settingsVersionGap(a: string, b: string): string[] {
  const left = digestFields(a);
  const right = digestFields(b);
  if (!left || !right) return [];
  return [...[...left.keys()].filter((name) => !right.has(name)), ...[...right.keys()].filter((name) => !left.has(name))];
}
