import { readFileSync } from 'node:fs';

/** One line a test tool appended to its log (`test/fixtures/worker-tools.mjs`): which process did what, and when. */
export interface RunNote {
  event: 'start' | 'abort' | 'done';
  taskId: string;
  pid: number;
  /** Epoch ms, the tool process's clock. */
  at: number;
  reason?: string;
}

/** Every note in `log` so far (none while the file does not exist); `Note` for tools that log another shape. */
export function runNotes<Note = RunNote>(log: string): Note[] {
  try {
    return readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Note);
  } catch {
    return [];
  }
}

/** Poll `probe` until it returns something truthy; throws naming `what` after `timeoutMs` (a hung test fails). */
export async function eventually<T>(what: string, probe: () => T | Promise<T>, timeoutMs = 15_000, intervalMs = 10): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
