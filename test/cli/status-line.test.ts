/**
 * The CLI's status line (issue 26 item 3): a restart is detected from the attempt number the server reports
 * (`_meta["dev.mcp-tasks/attempt"]`), never from two progress snapshots — a re-run's first status has no count.
 */
import { describe, expect, it } from 'vitest';

import { StatusLine } from '../../src/cli/status-line.js';
import type { TaskSnapshot } from '../../src/client/index.js';

const snapshot = (statusMessage: string, attempt?: number): TaskSnapshot => ({
  taskId: 't1',
  status: 'working',
  statusMessage,
  createdAt: '2026-01-01T00:00:00Z',
  lastUpdatedAt: '2026-01-01T00:00:01Z',
  ttlMs: null,
  ...(attempt === undefined ? {} : { attempt }),
});

function lines(snapshots: TaskSnapshot[], knownAttempt?: number): string[] {
  const written: string[] = [];
  const line = new StatusLine({ write: (text: string) => written.push(text), isTTY: false }, 't1', false, knownAttempt);
  for (const one of snapshots) line.update(one);
  line.clear();
  return written.join('').split('\n').filter(Boolean);
}

describe('StatusLine restart notice', () => {
  it('a new attempt whose first status carries no count is announced, with how far the previous run got', () => {
    const out = lines([snapshot('Scanning (13/200)', 1), snapshot('Started scanning 200 files', 2), snapshot('Scanning (8/200)', 2)]);
    const notices = out.filter((text) => text.includes('restarted'));
    expect(notices).toEqual(['mcp-tasks: task t1 was restarted by the server: attempt 2, its progress starts again (the previous run had reached 13/200)']);
  });

  it('progress going back within one attempt is not a restart; nor are snapshots without an attempt number', () => {
    expect(lines([snapshot('a (13/200)', 1), snapshot('b (8/200)', 1)]).some((text) => text.includes('restarted'))).toBe(false);
    expect(lines([snapshot('a (13/200)'), snapshot('b (8/200)')]).some((text) => text.includes('restarted'))).toBe(false);
  });

  it('an older attempt arriving late is no restart; the first attempt seen (following a re-run task) announces nothing', () => {
    expect(lines([snapshot('x (3/9)', 2), snapshot('y (7/9)', 1), snapshot('z (4/9)', 2)]).some((text) => text.includes('restarted'))).toBe(false);
    expect(lines([snapshot('Started', 3)]).some((text) => text.includes('restarted'))).toBe(false);
  });

  it('an attempt known from the journal (resume in a new process) makes the first snapshot of a later attempt a restart, and only then', () => {
    const restarted = lines([snapshot('Started', 2), snapshot('step (3/9)', 2)], 1).filter((text) => text.includes('restarted'));
    expect(restarted).toEqual(['mcp-tasks: task t1 was restarted by the server: attempt 2, its progress starts again']);
    expect(lines([snapshot('step (3/9)', 2)], 2).some((text) => text.includes('restarted'))).toBe(false);
  });
});

describe('StatusLine elapsed time', () => {
  it("on a terminal counts from the command's start (the process's), not from the first status", () => {
    const written: string[] = [];
    const line = new StatusLine({ write: (text: string) => written.push(text), isTTY: true }, 't1', false);
    line.update(snapshot('Scanning (1/200)', 1));
    line.clear();
    const shown = Number(/(\d+\.\d)s working/.exec(written.join(''))?.[1]);
    // This test process has run for a while already; a clock started at the first status would show 0.0 s.
    expect(shown).toBeGreaterThanOrEqual(Math.floor(process.uptime()) - 1);
    expect(shown).toBeGreaterThan(0);
  });
});
