import type { ChildProcess } from 'node:child_process';

/**
 * Every process a test file spawns through the helpers dies with the file. A test that times out while a server
 * it started is still coming up (or draining) leaves that process behind — with its port, its store and its CPU —
 * for the rest of the run; vitest ends each test file's process with SIGTERM, and that is when what is left here
 * is killed.
 */
const live = new Set<ChildProcess>();

function killAll(): void {
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
