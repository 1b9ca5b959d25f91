/**
 * The helper the multi-process tests wait for a log line with (`ServerProcess.logLine`): the CLI's pino lines are
 * written asynchronously and may reach the pipe after what they report is visible elsewhere (stop 41's CI failure
 * in test/e2e/takeover.test.ts). It must wait for a line that comes late, and fail — never pass — when it does not come.
 */
import { spawn } from 'node:child_process';

import { beforeAll, describe, expect, it } from 'vitest';

import { reaped } from '../helpers/child-reaper.js';
import { waitForLogLine } from '../helpers/server-process.js';
import { ensureBuilt } from './support.js';

function child(script: string) {
  const process_ = reaped(spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'ignore', 'pipe'] }));
  let output = '';
  process_.stderr?.on('data', (chunk) => (output += chunk));
  return { process: process_, output: () => output };
}

describe('waiting for a log line', () => {
  it('resolves with the output once a line written late arrives', async () => {
    const { process: late, output } = child("process.stderr.write('first\\n'); setTimeout(() => process.stderr.write('the late line\\n'), 300)");
    expect(output()).not.toContain('the late line');
    expect(await waitForLogLine(late, output, /late line/, 5_000)).toContain('first\nthe late line\n');
  });

  it('negative control: rejects, quoting the output, when the process ends without the line', async () => {
    const { process: ended, output } = child("process.stderr.write('something else\\n')");
    await expect(waitForLogLine(ended, output, 'the missing line', 5_000)).rejects.toThrow(/missing: its stderr closed; the output:\nsomething else/);
  });

  it('negative control: rejects after its bound when a live process never writes the line', async () => {
    const { process: silent, output } = child('setTimeout(() => {}, 10_000)');
    const started = Date.now();
    await expect(waitForLogLine(silent, output, 'never', 300)).rejects.toThrow(/not within 300 ms/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    silent.kill('SIGKILL');
  });
});

describe('why: a line of the CLI logger is written off the main thread', () => {
  beforeAll(() => ensureBuilt());
  it("with libuv's thread pool busy, a line logged first reaches the pipe after a line written later to process.stderr", async () => {
    // One pool thread, taken by a key derivation of ~100 ms: the logger's write queues behind it, the direct write does not.
    const logger = new URL('../../dist/cli/logger.js', import.meta.url).href;
    const script = `import('${logger}').then(({ createCliLogger }) => {
      const log = createCliLogger('info');
      require('node:crypto').pbkdf2('x', 'y', 300000, 32, 'sha256', () => {});
      log.warn({}, 'the logged line');
      process.stderr.write('written later\\n');
    })`;
    const spawned = reaped(spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, UV_THREADPOOL_SIZE: '1' } }));
    let output = '';
    spawned.stderr?.on('data', (chunk) => (output += chunk));
    await waitForLogLine(spawned, () => output, 'the logged line', 10_000);
    expect(output.indexOf('written later')).toBeGreaterThanOrEqual(0);
    expect(output.indexOf('written later')).toBeLessThan(output.indexOf('the logged line'));
  });
});

describe('the CLI logger at exit: the count of an open outage window is written, however the process ends', () => {
  beforeAll(() => ensureBuilt());
  it.each([
    { how: 'process.exit (a lost registration, a drain)', end: 'process.exit(3)', code: 3 },
    { how: 'an uncaught exception', end: "throw new Error('boom')", code: 1 },
  ])('$how, with the thread pool busy (the write queued behind it)', async ({ end, code }) => {
    const logger = new URL('../../dist/cli/logger.js', import.meta.url).href;
    const storeError = new URL('../../dist/core/store-error.js', import.meta.url).href;
    const script = `Promise.all([import('${logger}'), import('${storeError}')]).then(([{ createCliLogger }, { StoreError }]) => {
      const log = createCliLogger('info');
      require('node:crypto').pbkdf2('x', 'y', 300000, 32, 'sha256', () => {});
      for (let i = 0; i < 4; i++) log.error({ err: new StoreError('unavailable', 'Task store unavailable: cannot connect (ECONNREFUSED)') }, 'task store failed');
      setTimeout(() => { ${end}; }, 5);
    })`;
    const spawned = reaped(spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, UV_THREADPOOL_SIZE: '1' } }));
    let output = '';
    spawned.stderr?.on('data', (chunk) => (output += chunk));
    const exitCode = await new Promise<number | null>((resolveExit) => spawned.on('close', resolveExit));
    expect(exitCode).toBe(code);
    // Control: the first line of the window was written whole; then its count, which only the exit could write.
    expect(output).toContain('"msg":"task store failed"');
    expect(output, output).toContain('"repeats":3');
    expect(output).toContain('task store failed — 3 more like it not logged');
  });
});
