import type { ChildProcess } from 'node:child_process';

/**
 * Every process a test file spawns through the helpers dies with the file. A test that times out while a server
 * it started is still coming up (or draining) leaves that process behind — with its port, its store and its CPU —
 * for the rest of the run. Where vitest gives each file a process of its own, it ends that process with SIGTERM,
 * and that is when what is left here is killed; where files share a process (the e2e tier, `isolate: false`),
 * `test/helpers/reap-after-file.ts` kills what a file left once its own hooks are done.
 */
const live = new Set<ChildProcess>();

/** SIGKILL every tracked process that has not exited yet. */
export function killAll(): void {
  for (const child of live) child.kill('SIGKILL');
  live.clear();
}

process.once('exit', killAll);
process.once('SIGTERM', () => {
  killAll();
  // Then terminate as SIGTERM would have without this listener.
  process.kill(process.pid, 'SIGTERM');
});

/** Track `child` until it exits; returns it. */
export function reaped<T extends ChildProcess>(child: T): T {
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}
