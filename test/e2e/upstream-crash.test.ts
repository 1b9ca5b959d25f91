/**
 * Issue 28, crash semantics of forwarded calls: `serve --no-worker` and `mcp-tasks worker` as real processes on one
 * SQLite store, both with the same two upstreams — the real `@modelcontextprotocol/server-everything` over stdio,
 * once as `once` (default policy: not idempotent) and once as `rerun` (`upstreamTools: {"rerun_*": {idempotent:
 * true}}`). The worker is killed with SIGKILL while it forwards a call; what reached each upstream process is read
 * from the recording relay in front of it (test/fixtures/upstream-tap.mjs).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ensureBuilt } from '../cli/support.js';
import { eventually } from '../helpers/run-notes.js';
import { type ServerProcess, startServerProcess, startWorkerProcess, type WorkerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { endUpstreams, everythingStdio, tapEntries } from '../helpers/upstream-servers.js';
import { pollModernTask, postModern, TASKS_EXTENSION } from '../helpers/wire.js';

const LONG = 'trigger-long-running-operation';
const LEASE_MS = 1_500;
const ELICITING = { elicitation: { form: {} }, extensions: { [TASKS_EXTENSION]: {} } };

describe('kill -9 of the worker during a forwarded call (issue 28)', () => {
  const temp = makeTempDir('mcp-tasks-upstream-crash-');
  const taps = { once: join(temp.dir, 'once.tap'), rerun: join(temp.dir, 'rerun.tap') };
  const config = join(temp.dir, 'mcp-tasks.json');
  const processes: Array<ServerProcess | WorkerProcess> = [];
  /** The taps (relay pids) of the upstream processes of killed workers. */
  const killed: Array<{ log: string; tap: number }> = [];
  let api: ServerProcess;

  const common = () => ['--config', config, '--store', join(temp.dir, 'tasks.db'), '--no-builtins', '--lease-ms', String(LEASE_MS)];
  const worker = async (id: string): Promise<WorkerProcess> => {
    // A restarted worker under its predecessor's instance id takes the dead one's leases over at once.
    const started = await startWorkerProcess(['--data-dir', join(temp.dir, id), ...common(), '--instance-id', id]);
    processes.push(started);
    return started;
  };
  /** `tools/call` requests of the long tool that reached the upstream through `tap`, with the tap (process) each went through. */
  const calls = (tap: string) =>
    tapEntries(tap).filter((entry) => entry.dir === 'in' && entry.message?.method === 'tools/call' && entry.message.params?.name === LONG);
  const createTask = async (name: string, args: Record<string, unknown>): Promise<string> => {
    const created = await postModern(api.url, 'tools/call', { name, arguments: args });
    const taskId = created.body.result?.taskId;
    if (typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(created.body)}`);
    return taskId;
  };

  beforeAll(async () => {
    ensureBuilt();
    writeFileSync(
      config,
      JSON.stringify({
        upstreams: [everythingStdio('once', taps.once), everythingStdio('rerun', taps.rerun)],
        upstreamTools: { 'rerun_*': { idempotent: true } },
      }),
    );
    api = await startServerProcess(join(temp.dir, 'api'), ['--no-worker', '--instance-id', 'gateway-api', ...common()]);
    processes.push(api);
  }, 120_000);
  afterAll(async () => {
    for (const running of processes.reverse()) await (running as ServerProcess).stop?.().catch(() => undefined);
    // The upstreams of the workers killed while asking never end their operation (no answer can reach them).
    for (const log of Object.values(taps)) endUpstreams(log);
    temp.remove();
  });

  /**
   * Start worker `id`, create a task of `<upstream>_<LONG>`, kill the worker with SIGKILL once its call reached the
   * upstream, start a worker under the same id (it takes the leases over at once) and wait for the task to end.
   */
  const killMidCall = async (upstream: keyof typeof taps, id: string, args: Record<string, unknown>) => {
    const first = await worker(id);
    const taskId = await createTask(`${upstream}_${LONG}`, args);
    const [sent] = await eventually('the worker to forward the call', () => (calls(taps[upstream]).length > 0 ? calls(taps[upstream]) : undefined));
    await first.kill9();
    killed.push({ log: taps[upstream], tap: sent?.tap as number });
    processes.splice(processes.indexOf(first), 1);
    const second = await worker(id);
    const done = await pollModernTask(api.url, taskId, { timeoutMs: 20_000 });
    return { sent, done, second };
  };

  it('a call of a tool that is not idempotent is never sent again: the task fails interrupted', async () => {
    const { sent, done, second } = await killMidCall('once', 'worker-1', { duration: 6, steps: 6 });
    await second.stop();
    processes.splice(processes.indexOf(second), 1);
    expect(done.status).toBe('failed');
    expect(done.error).toMatchObject({ code: -32603, data: { reason: 'interrupted' } });
    expect(String(done.statusMessage)).toMatch(
      /^Task was interrupted \(its worker stopped while once_trigger-long-running-operation ran\) and is not safe to re-run$/,
    );
    // Exactly one tools/call ever reached an upstream for it, from the first worker's upstream process.
    expect(calls(taps.once)).toHaveLength(1);
    expect(calls(taps.once)[0]?.tap).toBe(sent?.tap);
  });

  it('a call of a tool configured idempotent is sent again once, by the next worker, and completes', async () => {
    const { sent, done } = await killMidCall('rerun', 'worker-2', { duration: 2, steps: 2 });
    expect(done.status).toBe('completed');
    expect(done.result).toMatchObject({ content: [{ type: 'text', text: 'Long running operation completed. Duration: 2 seconds, Steps: 2.' }] });
    // Two calls in all: the interrupted one and the re-run, through two different upstream processes.
    const both = calls(taps.rerun);
    expect(both).toHaveLength(2);
    expect(both[0]?.tap).toBe(sent?.tap);
    expect(both[1]?.tap).not.toBe(sent?.tap);
  });

  it("a killed worker's upstream process sees its stdin close and exits once its own work ends", async () => {
    expect(killed).toHaveLength(2);
    for (const { log, tap } of killed) {
      await eventually(
        `the upstream behind tap ${tap} to see end of input`,
        () => tapEntries(log).find((entry) => entry.tap === tap && entry.dir === 'eof'),
        5_000,
      );
      // server-everything finishes the operation it was running (up to 6 s here: the reason a call that is not
      // idempotent is never sent again), then exits.
      await eventually(`the upstream behind tap ${tap} to exit`, () => tapEntries(log).find((entry) => entry.tap === tap && entry.dir === 'exit'), 30_000);
    }
    // Negative control: the upstream processes of the live API process and worker-2 have not exited.
    for (const log of Object.values(taps)) {
      const ended = new Set(
        tapEntries(log)
          .filter((entry) => entry.dir === 'exit')
          .map((entry) => entry.tap),
      );
      const started = tapEntries(log)
        .filter((entry) => entry.dir === 'start')
        .map((entry) => entry.tap);
      expect(started.filter((tap) => !ended.has(tap))).toHaveLength(2);
    }
  });

  /**
   * The worker is killed while its task waits in place for an answer to the upstream's question (its lease held by
   * the dead worker); the answer then comes to the API process. The answered task is recovered like any interrupted
   * run: attempt 1 stays counted, so a tool that is not idempotent fails `interrupted` and is never sent again.
   */
  const killWhileAsking = async (upstream: keyof typeof taps, id: string) => {
    const asking = () =>
      tapEntries(taps[upstream]).filter(
        (entry) => entry.dir === 'in' && entry.message?.method === 'tools/call' && entry.message.params?.name === 'trigger-elicitation-request',
      );
    // The only worker: the one killed must be the one that holds the task.
    for (const running of processes.filter((entry) => entry !== api)) {
      await (running as WorkerProcess).stop();
      processes.splice(processes.indexOf(running), 1);
    }
    const first = await worker(id);
    const created = await postModern(api.url, 'tools/call', { name: `${upstream}_trigger-elicitation-request`, arguments: {} }, { capabilities: ELICITING });
    const taskId = created.body.result?.taskId as string;
    expect(await pollModernTask(api.url, taskId, { until: (status) => status !== 'working' })).toMatchObject({ status: 'input_required' });
    await first.kill9();
    processes.splice(processes.indexOf(first), 1);
    const second = await worker(id);
    const update = await postModern(api.url, 'tasks/update', { taskId, inputResponses: { 'input-1': { action: 'accept', content: { name: 'Ada' } } } });
    expect(update.body.error).toBeUndefined();
    const done = await pollModernTask(api.url, taskId, { timeoutMs: 20_000 });
    await second.stop();
    processes.splice(processes.indexOf(second), 1);
    return { done, sent: asking().length };
  };

  it('killed while its task waits for an answer in place: once answered, a tool that is not idempotent fails interrupted, its call sent once', async () => {
    const { done, sent } = await killWhileAsking('once', 'worker-3');
    expect(done.status).toBe('failed');
    expect(done.error).toMatchObject({ code: -32603, data: { reason: 'interrupted' } });
    expect(sent).toBe(1);
  });

  it('killed while its task waits in place: an idempotent tool is sent again once, and its question is answered from the stored answer', async () => {
    const { done, sent } = await killWhileAsking('rerun', 'worker-4');
    expect(done.status).toBe('completed');
    expect(JSON.stringify(done.result)).toContain('\\"name\\": \\"Ada\\"');
    expect(sent).toBe(2);
  });
});
