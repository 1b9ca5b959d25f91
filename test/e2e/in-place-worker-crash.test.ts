/**
 * A worker killed (kill -9) while a run waits in place for its answer (`elicits: 'in-place'`: the task is
 * `input_required` and the run holds its slot and lease), with `serve --no-worker` and two `mcp-tasks worker`
 * processes on one PostgreSQL database — the crash twin of `test/execution/in-place-drain.test.ts`. Recovery takes
 * over such a task once its lease lapsed, as it takes over a running one: a tool that is not safe to re-run fails
 * `interrupted` (its question is not left open for a run that is gone, where an answer could only fail it); an
 * idempotent one keeps its question, and once answered the surviving worker runs it again with the answer.
 */
import { join, resolve } from 'node:path';

import { describe, expect, it } from 'vitest';

import { apiAndWorkersOnPostgres } from '../helpers/api-and-workers.js';
import { eventually, runNotes } from '../helpers/run-notes.js';
import { DECLARING, pollModernTask, postModern } from '../helpers/wire.js';

const TOOLS = resolve(import.meta.dirname, '../fixtures/in-place-tools.mjs');
const LEASE_MS = 1_500;
/** The request declares elicitation: a task that asks is only created for a client that can answer. */
const CAPABILITIES = { ...DECLARING, elicitation: { form: {} } };

describe('kill -9 of the worker whose run waits in place (PostgreSQL, serve --no-worker + 2 workers)', () => {
  const rig = apiAndWorkersOnPostgres('mcp-tasks-in-place-crash-', () => ['--no-builtins', '--tools', TOOLS, '--lease-ms', String(LEASE_MS)], 'stop');
  const { temp, startWorker } = rig;

  /** A task of `tool` created on the API process, waiting in place in one of two workers: that worker killed -9. */
  async function killWhileAsking(tool: string, log: string) {
    // Only this test's two workers take the task.
    await rig.endWorkers();
    const [a, b] = await Promise.all([startWorker(`${tool}-1`), startWorker(`${tool}-2`)]);
    const created = await postModern(rig.api.url, 'tools/call', { name: tool, arguments: { log } }, { capabilities: CAPABILITIES });
    const taskId = created.body.result?.taskId;
    if (typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(created.body)}`);
    await pollModernTask(rig.api.url, taskId, { until: (status) => status === 'input_required' });
    const started = await eventually('the run to start', () => runNotes(log).find((note) => note.event === 'start'));
    const [asking, other] = started.pid === a.child.pid ? [a, b] : [b, a];
    expect(started.pid).toBe(asking.child.pid);
    await asking.kill9();
    return { taskId, other };
  }

  it('a tool that is not safe to re-run fails interrupted once the lease lapsed, its question withdrawn; it ran once', async () => {
    const log = join(temp.dir, 'once.log');
    const { taskId } = await killWhileAsking('ask_in_place', log);
    // Lease 1.5 s, recovery every 1.5 s: well within 10 s. Before the fix the task stayed input_required (with the
    // dead worker's lease) until the input timeout, an hour by default, and an answer only made it fail.
    const ended = await pollModernTask(rig.api.url, taskId, { timeoutMs: 10_000 });
    expect(ended).toMatchObject({ status: 'failed', error: { data: { reason: 'interrupted' } } });
    expect(ended.statusMessage).toBe('Task was interrupted (its worker stopped while ask_in_place waited for input) and is not safe to re-run');
    expect(ended.inputRequests).toBeUndefined();
    expect(runNotes(log).map((note) => note.event)).toEqual(['start']);
  }, 60_000);

  it('an idempotent tool keeps its question past the lapse; answered, the surviving worker runs it again with the answer', async () => {
    const log = join(temp.dir, 'idempotent.log');
    const { taskId, other } = await killWhileAsking('ask_in_place_idempotent', log);
    // Several lease lengths and recovery passes later, it still waits for its answer, with no run and no lease.
    await new Promise((resolveWait) => setTimeout(resolveWait, 4 * LEASE_MS));
    const waiting = await pollModernTask(rig.api.url, taskId, { until: () => true });
    expect(waiting).toMatchObject({ status: 'input_required', inputRequests: { 'input-1': { method: 'elicitation/create' } } });
    const answered = await postModern(rig.api.url, 'tasks/update', { taskId, inputResponses: { 'input-1': { action: 'accept', content: { go: true } } } });
    expect(answered.body.result).toMatchObject({ resultType: 'complete' });
    const ended = await pollModernTask(rig.api.url, taskId, { timeoutMs: 10_000 });
    expect(ended).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: `answered accept in ${other.child.pid}` }] } });
    expect(runNotes(log).map((note) => [note.event, note.pid])).toEqual([
      ['start', expect.any(Number)],
      ['start', other.child.pid],
      ['done', other.child.pid],
    ]);
  }, 60_000);
});
