/**
 * Processes of this host, as the process registry meets them: whether a registered pid still runs here, and whether
 * a registration is a predecessor's — the row of a process of this host that is gone, or of this very process under
 * its pid (a restart that got the same pid, as pid 1 in a container) — rather than a live process's.
 */
import { hostname } from 'node:os';

/** Whether process `pid` exists on this host (signal 0 probes without signalling). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether `registration` was left by a predecessor of this process: it names this host and either this process's
 * pid or a pid that no longer runs here. Such a row is taken over at registration, and no live process stands behind
 * it.
 */
export function gonePredecessor(registration: { readonly host: string; readonly pid: number }): boolean {
  return registration.host === hostname() && (registration.pid === process.pid || !pidAlive(registration.pid));
}
