import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TaskJournal } from '../../src/client/index.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { cliRunner, ensureBuilt, requestorEnv } from './support.js';

// A call the server refuses before anything runs — its quota full, the operator's kill switch on — is not a call
// that failed: nothing ran, and a script may call again later. `call` exits 7 (refused) with the server's reason,
// on both generations; a tool that ran and threw still exits 2.

const TOOLS = resolve(import.meta.dirname, '../fixtures/recovery-tools.mjs');
const THROWING = resolve(import.meta.dirname, '../fixtures/throwing-tools.mjs');
/** The server's tools, which the admin command loads too (a kill switch names a tool it knows). */
const SERVER_TOOLS = ['--no-builtins', '--fixtures', 'conformance', '--tools', TOOLS, '--tools', THROWING];
const GENERATIONS = [
  ['v2', '2026-07-28'],
  ['v1', '2025-11-25'],
] as const;

/** Whether the `--json` output `stdout` has every field of `expected` (nested objects compared by their fields). */
function matches(stdout: string, expected: Record<string, unknown>): boolean {
  const covers = (actual: unknown, wanted: unknown): boolean =>
    typeof wanted === 'object' && wanted !== null
      ? typeof actual === 'object' && actual !== null && Object.entries(wanted).every(([key, value]) => covers((actual as Record<string, unknown>)[key], value))
      : actual === wanted;
  try {
    return covers(JSON.parse(stdout), expected);
  } catch {
    return false;
  }
}

describe('call refused by the server (a quota, the kill switch): exit 7, nothing ran', () => {
  const temp = makeTempDir('mcp-tasks-refused-');
  const env = requestorEnv(join(temp.dir, 'tasks.json'));
  const { cli } = cliRunner(env);
  /** The CLI with another journal (`MCP_TASKS_CLIENT_STATE`), a 10 s `--timeout` so a followed task cannot hold it. */
  const resumeCli = (args: string[], journal: string) => cliRunner({ ...env, MCP_TASKS_CLIENT_STATE: journal }).cli([...args, '--timeout', '10']);
  const dataDir = join(temp.dir, 'data');
  /** `mcp-tasks admin kill-switch <action…> --tool <tool>` on the server's store. */
  const killSwitch = (tool: string, ...action: string[]) => cli(['admin', 'kill-switch', ...action, '--tool', tool, '--data-dir', dataDir, ...SERVER_TOOLS]);
  let server: ServerProcess;
  const holding = join(temp.dir, 'holding.log');

  beforeAll(async () => {
    ensureBuilt();
    server = await startServerProcess(dataDir, [...SERVER_TOOLS, '--max-active-tasks-per-owner', '1', '--kill-switch-refresh-ms', '100']);
    // One task holds the owner's only slot until the test releases it.
    const held = await cli(['call', 'idempotent_job', '--args', JSON.stringify({ log: holding }), '--url', server.url, '--detach']);
    expect(held.code, held.stderr).toBe(0);
    for (let waited = 0; !(existsSync(holding) && readFileSync(holding, 'utf8').includes('run')); waited += 50) {
      if (waited > 15_000) throw new Error('the holding task never started');
      await new Promise((resolveWait) => setTimeout(resolveWait, 50));
    }
  }, 90_000);
  afterAll(async () => {
    writeFileSync(`${holding}.release`, '');
    await server?.stop();
    temp.remove();
  });

  it.each(GENERATIONS)(
    '%s: the quota is full (-31001 active_tasks) → exit 7, the JSON names the reason, the tool did not run',
    async (_generation, protocol) => {
      const log = join(temp.dir, `quota-${protocol}.log`);
      const run = await cli(['call', 'idempotent_job', '--args', JSON.stringify({ log }), '--url', server.url, '--protocol', protocol, '--json']);
      expect(run.code, run.stderr).toBe(7);
      expect(run.stderr).toMatch(/^mcp-tasks: the server refused the call, nothing ran \(active_tasks\): tools\/call idempotent_job: Quota exceeded/m);
      expect(JSON.parse(run.stdout)).toMatchObject({ status: 'refused', tool: 'idempotent_job', reason: 'active_tasks', exitCode: 7, error: { code: -31001 } });
      expect(existsSync(log)).toBe(false);
    },
  );

  it.each(GENERATIONS)(
    '%s: the kill switch is on (fallback reject): the server refuses (-31003), or the v1 manifest already says no task → exit 7',
    async (_generation, protocol) => {
      const admin = (...action: string[]) => killSwitch('slow_compute', ...action);
      const call = () => cli(['call', 'slow_compute', '--args', '{"seconds":0}', '--url', server.url, '--protocol', protocol, '--task', 'required', '--json']);
      const on = await admin('on', '--fallback', 'reject');
      expect(on.code, on.stderr).toBe(0);
      try {
        // The server reads the switch every 100 ms: call until it answers with it (meanwhile the full quota refuses).
        const expected =
          protocol === '2026-07-28' ? { status: 'refused', reason: 'kill_switch', error: { code: -31003 } } : { status: 'refused', policy: 'required' };
        let run = await call();
        for (let attempt = 0; attempt < 40 && !matches(run.stdout, expected); attempt++) run = await call();
        expect(run.code, `${run.stderr}\n${run.stdout}`).toBe(7);
        // 2026-07-28 sends the call and the server refuses it; a 2025-11-25 session's tools/list already says the tool
        // takes no task now, so the requestor's --task required refuses it before sending. Nothing ran either way.
        expect(JSON.parse(run.stdout)).toMatchObject(expected);
      } finally {
        expect((await admin('off')).code).toBe(0);
      }
    },
  );

  it('a resend the server refuses (kill switch on after the first send was recorded) stays unknown: resume exits 8, the call stays journaled', async () => {
    // The held task's call, as if its answer had been lost: a pending entry with its idempotency key in a journal of
    // its own (so resume does not also follow the held task). The kill switch is checked before the key, so the
    // resend is refused although the first send is recorded and running — the refusal proves nothing about it.
    const held = (await new TaskJournal(join(temp.dir, 'tasks.json')).list()).find((entry) => entry.tool === 'idempotent_job');
    expect(held?.idempotencyKey).toEqual(expect.any(String));
    const journalPath = join(temp.dir, 'resend.json');
    const journal = new TaskJournal(journalPath);
    await journal.addPending({
      correlationId: 'c-resend-1',
      idempotencyKey: held?.idempotencyKey as string,
      url: server.url,
      generation: 'v2',
      protocolVersion: held?.protocolVersion as string,
      tool: 'idempotent_job',
      arguments: { log: holding },
      sentAt: new Date().toISOString(),
      idempotencyHonoured: true,
    });
    const admin = (...action: string[]) => killSwitch('idempotent_job', ...action);
    const on = await admin('on', '--fallback', 'reject');
    expect(on.code, on.stderr).toBe(0);
    try {
      // Wait until the server has read the switch (every 100 ms): a new call is refused by it (until then, by the quota).
      const probe = () => cli(['call', 'idempotent_job', '--args', JSON.stringify({ log: join(temp.dir, 'probe.log') }), '--url', server.url, '--json']);
      let probed = await probe();
      for (let attempt = 0; attempt < 40 && !matches(probed.stdout, { reason: 'kill_switch' }); attempt++) probed = await probe();
      expect(JSON.parse(probed.stdout)).toMatchObject({ reason: 'kill_switch' });
      const run = await resumeCli(['resume', '--url', server.url], journalPath);
      expect(run.stderr).toMatch(/was sent again and refused/);
      expect(run.code, run.stderr).toBe(8);
      expect((await journal.listPending()).map((entry) => entry.correlationId)).toEqual(['c-resend-1']);
    } finally {
      expect((await admin('off')).code).toBe(0);
    }
  });

  it('control: a call the server answers with the error of a tool that ran (a sync tool that threw) still exits 2', async () => {
    const run = await cli(['call', 'sync_throws', '--url', server.url, '--json']);
    expect(run.code, run.stderr).toBe(2);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'failed' });
  });
});
