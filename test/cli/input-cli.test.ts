import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connectTasksClient, TaskJournal, type TaskSnapshot } from '../../src/client/index.js';
import { countingTools } from '../client/support.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { cliRunner, ensureBuilt, MAIN } from './support.js';

/**
 * `mcp-tasks call` and `mcp-tasks answer` with tasks that ask for input, spawned against a real server. stdin is
 * not a terminal here, so answers come from `--answers` or from a second process.
 */
describe('mcp-tasks call / answer with questions (spawned CLI against a real server)', () => {
  const temp = makeTempDir('mcp-tasks-cli-input-');
  const journalPath = join(temp.dir, 'state', 'tasks.json');
  const env: NodeJS.ProcessEnv = { ...process.env, MCP_TASKS_CLIENT_STATE: journalPath };
  delete env.MCP_TASKS_URL;
  delete env.MCP_TASKS_TOKEN;
  const { start, cli } = cliRunner(env);
  let running: RunningTasksServer;

  /** Wait (by polling the server, no sleeps) until the task asks. */
  const untilInputRequired = async (taskId: string, protocol: '2025-11-25' | '2026-07-28'): Promise<void> => {
    const client = await connectTasksClient({ url: running.url, protocol, journal: false });
    try {
      let snapshot: TaskSnapshot;
      do snapshot = await client.getTask(taskId);
      while (snapshot.status === 'working');
      expect(snapshot.status).toBe('input_required');
    } finally {
      await client.close();
    }
  };

  beforeAll(async () => {
    ensureBuilt();
    running = await startTasksServer({ tools: countingTools().tools, limits: { pollIntervalMs: 50 } });
  });
  afterAll(async () => {
    await running.close();
    temp.remove();
  });

  it.each(['2025-11-25', '2026-07-28'])('call confirm_delete --answers completes over %s', async (protocol) => {
    const run = await cli([
      'call',
      'confirm_delete',
      '--args',
      '{"filename":"notes.txt"}',
      '--answers',
      '{"confirm": true}',
      '--url',
      running.url,
      '--protocol',
      protocol,
    ]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('Deleted notes.txt\n');
    expect(run.stderr).toContain('mcp-tasks: answered input-1 (accept) from --answers');
  });

  it('answers two questions in order from an array, and the MRTR question before a task by field name', async () => {
    const multi = await cli(['call', 'multi_input', '--answers', '[{"action":"decline"},{"confirm":true}]', '--url', running.url]);
    expect([multi.code, multi.stdout]).toEqual([0, 'first: decline, second: accept\n']);
    const named = await cli(['call', 'test_tool_with_task', '--answers', '{"name":"Ada"}', '--url', running.url]);
    expect([named.code, named.stdout]).toEqual([0, 'Hello, Ada!\n']);
    expect(named.stderr).toMatch(/answered gather-1 \(accept\) from --answers\nmcp-tasks: task \S+ created/);
  });

  it('an MRTR question without an answer: exit 6, the question and an example --answers; no task was created', async () => {
    const run = await cli(['call', 'test_tool_with_task', '--url', running.url]);
    expect(run.code).toBe(6);
    expect(run.stderr).toBe(
      'mcp-tasks: test_tool_with_task asks for input before it starts, and none was given:\n' +
        '  gather-1: What is your name?\n    name: text, required\n' +
        '  answer with: --answers \'{"name":"…"}\'\n',
    );
  });

  it.each(['2025-11-25', '2026-07-28'])(
    'without a terminal or --answers, call says how to answer and keeps waiting; `mcp-tasks answer` from another process completes it (%s)',
    async (protocol) => {
      const call = start(['call', 'confirm_delete', '--args', '{"filename":"wait.txt"}', '--url', running.url, '--protocol', protocol]);
      const [, id] = await call.stderrLine(/task (\S+) needs input \(input-1\)/);
      expect((await call.stderrLine(/answer it with: .*\n/))[0]).toBe(`answer it with: node ${MAIN} answer ${id} --answers '{"confirm":true}'\n`);
      const answer = await cli(['answer', id as string, '--answers', '{"confirm": true}']);
      expect([answer.code, answer.stdout]).toEqual([0, `task ${id}: answered input-1\n`]);
      const run = await call.done;
      expect([run.code, run.stdout]).toEqual([0, 'Deleted wait.txt\n']);
    },
  );

  it.each(['2025-11-25', '2026-07-28'])('`mcp-tasks answer` from a second process answers a task created with --detach (%s)', async (protocol) => {
    const detached = await cli(['call', 'multi_input', '--detach', '--url', running.url, '--protocol', protocol]);
    expect(detached.code).toBe(0);
    const id = detached.stdout.trim();
    await untilInputRequired(id, protocol as '2025-11-25');

    // The journal gives URL and protocol; an entry for one key answers only that question.
    const first = await cli(['answer', id, '--answers', '{"input-2": {"confirm": true}}']);
    expect(first.code).toBe(6);
    expect(first.stdout).toBe(`task ${id}: answered input-2\ntask ${id}: still waiting for input-1\n`);
    expect(first.stderr).toContain(`task ${id} needs input (input-1): Confirm the first step?`);

    const rest = await cli(['answer', id, '--answers', '{"action": "decline"}', '--json']);
    expect(rest.code).toBe(0);
    expect(JSON.parse(rest.stdout)).toMatchObject({
      taskId: id,
      status: 'input_required',
      answered: ['input-1'],
      left: [],
      asked: [{ key: 'input-1', message: 'Confirm the first step?' }],
    });

    const watch = await cli(['watch', id]);
    expect([watch.code, watch.stdout]).toEqual([0, 'first: decline, second: accept\n']);
    expect(await new TaskJournal(journalPath).get(id)).toBeUndefined();
  });

  it('--detach-on-input exits 6 at a question nobody answers here; the task keeps waiting', async () => {
    const run = await cli(['call', 'confirm_delete', '--args', '{"filename":"x"}', '--detach-on-input', '--url', running.url]);
    expect(run.code).toBe(6);
    const id = run.stderr.match(/task (\S+) created/)?.[1] as string;
    expect(run.stderr).toContain(
      `task ${id} needs input (input-1): Delete x?\n  confirm: yes/no, required\n  answer it with: node ${MAIN} answer ${id} --answers '{"confirm":true}'\n`,
    );
    const get = await cli(['get', id]);
    expect(get.stdout).toContain(`status   input_required\n`);
    expect(get.stdout).toContain(`input    input-1: Delete x?\n         field confirm: yes/no, required\n         answer with: node ${MAIN} answer ${id}\n`);
    const answered = await cli(['answer', id, '--answers', '{"confirm": false}']);
    expect(answered.code).toBe(0);
  });

  it('answer: nothing waiting exits 0; --answers that do not fit are reported and the question left open (6); bad JSON 64; unknown task 4', async () => {
    const done = await cli(['call', 'confirm_delete', '--args', '{"filename":"y"}', '--answers', '{"confirm": true}', '--detach', '--url', running.url]);
    const id = done.stdout.trim();
    await untilInputRequired(id, '2026-07-28');
    const wrong = await cli(['answer', id, '--answers', '{"input-1": {"confirm": "yes"}}']);
    expect(wrong.code).toBe(6);
    expect(wrong.stderr).toContain('mcp-tasks: --answers does not fit input-1 ("Delete y?"): confirm must be true or false\n');
    expect(await cli(['answer', id, '--answers', '{"confirm": true}'])).toMatchObject({ code: 0 });
    const watch = await cli(['watch', id, '--url', running.url]);
    expect(watch.stdout).toBe('Deleted y\n');
    const nothing = await cli(['answer', id, '--url', running.url]);
    expect([nothing.code, nothing.stdout]).toEqual([0, `task ${id} is completed; no question is waiting\n`]);
    expect(await cli(['answer', id, '--answers', '{nope'])).toMatchObject({ code: 64, stderr: expect.stringContaining('--answers is not valid JSON') });
    expect(await cli(['answer', 'Zz9Yy8Xx7Ww6Vv5Uu4Tt3S', '--url', running.url])).toMatchObject({ code: 4 });
  });

  it('call --help documents --answers', async () => {
    const help = await cli(['call', '--help']);
    expect(help.stdout).toContain('--answers <json>');
    expect(help.stdout).toContain('{"input-2": {"confirm": false}}');
    expect(help.stdout).toContain('6 input needed');
  });
});
