import type { NewProcessEntry, ProcessRecord, RegisterProcessResult } from '../process-record.js';

/**
 * The process registry (port "processes", issue 11 item 6): every API and worker process registers under an
 * instance id with a heartbeat judged on the store's clock; a lapsed registration is reaped and its leases released
 * (see `TaskLeases.releaseLeasesOf`). Durations in ms. Errors: only `StoreError`.
 */
export interface ProcessRegistry {
  /**
   * Register a process under `entry.instanceId` with a heartbeat lapsing `ttlMs` from the store's now. Refused
   * (`registered: false`, nothing written) while another token holds the id with a live heartbeat, unless that
   * token is `replaceToken` (the caller established that its process is gone). Port addition (issue 11 item 6).
   */
  registerProcess(entry: NewProcessEntry, ttlMs: number, replaceToken?: string): Promise<RegisterProcessResult>;

  /** Renew the heartbeat of `instanceId` while `token` holds it; `false` when another token (or nobody) does. */
  heartbeatProcess(instanceId: string, token: string, ttlMs: number): Promise<boolean>;

  /**
   * Record that the process holding `instanceId` under `token` drains from the store's now on (it finishes or hands
   * back its runs and takes no new task), for `doctor` and the API processes' worker presence to tell it from a worker
   * that takes tasks. Idempotent: a second call keeps the first time. The mark belongs to that registration: one that
   * replaces it (a restart under the id) does not drain. `false`, nothing written, when `token` does not hold the id.
   * Port addition (draining workers counted as live by `doctor`).
   */
  markProcessDraining(instanceId: string, token: string): Promise<boolean>;

  /** Remove the registration of `instanceId` if `token` holds it (a clean stop). */
  deregisterProcess(instanceId: string, token: string): Promise<void>;

  /** Every registered process, by instance id, `live` judged on the store's clock, `drainingSince` as marked. */
  listProcesses(): Promise<ProcessRecord[]>;

  /**
   * Delete the registrations whose heartbeat lapsed and release every lease their processes hold, in one
   * transaction (as `TaskLeases.releaseLeasesOf`). Returns the instance ids reaped and the tasks released.
   * `exceptInstanceId` (the caller's own id) is never reaped: a reap that waited behind a stalled write, or one sent
   * while the caller's own heartbeat was failing, must not release the leases of the caller's running tasks — the
   * other processes reap it if it really stopped.
   */
  reapLapsedProcesses(exceptInstanceId?: string): Promise<{ instanceIds: string[]; taskIds: string[] }>;
}
