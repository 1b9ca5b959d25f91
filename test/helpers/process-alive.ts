import { readFileSync } from 'node:fs';

/**
 * Whether the process `pid` still runs, asked until `withinMs` have passed. A zombie counts as gone: an orphan is
 * reaped by PID 1, and where PID 1 reaps nothing (some containers) a dead orphan stays a zombie for good.
 */
export async function stillRunning(pid: number, withinMs = 3000): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    let alive = true;
    try {
      process.kill(pid, 0);
      alive = !/^\S+ \S+ Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/\(.*\)/, 'name'));
    } catch {
      alive = false;
    }
    if (!alive || Date.now() >= deadline) return alive;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Whether the process `pid` is gone within `withinMs` (see {@link stillRunning}). One still running then is killed
 * (SIGKILL): a test that finds a process left behind must not leave it behind itself.
 */
export async function goneWithin(pid: number, withinMs = 3000): Promise<boolean> {
  if (!(await stillRunning(pid, withinMs))) return true;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // it ended just now
  }
  return false;
}

/** The parent of the running process `pid` (Linux: from `/proc/<pid>/stat`). */
export function parentOf(pid: number): number {
  // `pid (name) state ppid …`; the name may hold blanks and parentheses.
  return Number(
    readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /, '')
      .split(' ')[1],
  );
}
