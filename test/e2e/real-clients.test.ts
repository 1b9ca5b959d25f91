/**
 * Our server with the clients people actually run (issue 13 item 8), over real HTTP, each request counted at a
 * loopback proxy in front of the server:
 * - `@apify/mcpc` 0.2.6 drives 2025-11-25 tasks (`--task`, `--detach`, `tasks-get|tasks-result|tasks-cancel`);
 * - the MCP Inspector CLI 2.12.0 on both generations (`--protocol-era legacy|modern`);
 * - `@langchain/mcp-adapters` 1.1.4, a client without task support: task-optional tools run inline; task-required
 *   tools are refused clearly by its SDK 1.x client before anything is sent (with `--task-fallback-tools` it takes
 *   the fallback path instead: task-fallback-tools.test.ts).
 */
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { countingTools } from '../client/support.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { clientHome, inspectorCli, mcpc, mcpdo, mcpdoPrivateEnv } from '../helpers/real-clients.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';

describe('real MCP clients against mcp-tasks', () => {
  const counting = countingTools();
  let running: RunningTasksServer;
  let proxy: FaultProxy;

  beforeAll(async () => {
    running = await startTasksServer({ tools: counting.tools, limits: { pollIntervalMs: 200 } });
    proxy = await FaultProxy.start(running.url); // no faults armed: it counts what reaches the server
  });
  afterAll(async () => {
    await proxy.close();
    await running.close();
  });

  describe('@apify/mcpc (2025-11-25 tasks)', () => {
    const home = clientHome('mcpc-home-');
    const session = '@mcp-tasks-test';
    const json = async (...args: string[]): Promise<Record<string, unknown>> => {
      const result = await mcpc(['--json', session, ...args], home.env);
      expect(result.code, `${args.join(' ')}: ${result.stdout}${result.stderr}`).toBe(0);
      return JSON.parse(result.stdout) as Record<string, unknown>;
    };

    beforeAll(async () => {
      const connected = await mcpc(['connect', proxy.url, session], home.env);
      expect(connected.code, connected.stderr).toBe(0);
    });
    afterAll(async () => {
      await mcpc(['close', session], home.env);
      home.dispose();
    });

    it('tools-call --task runs a task to its result, one tools/call, polled with tasks/get', async () => {
      const [calls, gets, runs] = [proxy.forwarded('tools/call'), proxy.forwarded('tasks/get'), counting.runs.get('slow_compute') ?? 0];
      const result = await json('tools-call', 'slow_compute', 'seconds:=0.5', 'label:=mcpc', '--task');
      expect(result).toMatchObject({ content: [{ type: 'text', text: 'Computed mcpc after 0.5s' }] });
      expect(proxy.forwarded('tools/call')).toBe(calls + 1);
      expect(proxy.forwarded('tasks/get')).toBeGreaterThan(gets);
      expect(counting.runs.get('slow_compute')).toBe(runs + 1);
    });

    it('--detach, then tasks-get, tasks-cancel and tasks-result of the same task', async () => {
      const created = await json('tools-call', 'slow_compute', 'seconds:=60', '--detach');
      expect(created).toMatchObject({ status: 'working', taskId: expect.any(String) });
      const taskId = created.taskId as string;
      expect(await json('tasks-get', taskId)).toMatchObject({ taskId, status: 'working', pollInterval: 200 });
      expect(await json('tasks-cancel', taskId)).toMatchObject({ taskId, status: 'cancelled' });
      const result = await mcpc(['--json', session, 'tasks-result', taskId], home.env);
      expect(result.code).not.toBe(0);
      expect(result.stdout + result.stderr).toContain('Task was cancelled');
    });

    it('tasks-list fails without authentication: tasks/list exists only with an owner to scope it to (R51)', async () => {
      const result = await mcpc(['--json', session, 'tasks-list'], home.env);
      expect(result.code).not.toBe(0);
      expect(result.stdout + result.stderr).toContain('-32601');
    });
  });

  describe('MCP Inspector CLI 2.12.0', () => {
    const home = clientHome('inspector-home-');
    afterAll(() => home.dispose());

    it.each([
      ['legacy', '2025-11-25'],
      ['modern', '2026-07-28'],
    ])('--protocol-era %s (%s): a task-optional tool and a task-required tool, through tasks', async (era) => {
      const call = (tool: string, args: Record<string, unknown>) =>
        inspectorCli(
          [
            '--server-url',
            proxy.url,
            '--protocol-era',
            era,
            '--method',
            'tools/call',
            '--tool-name',
            tool,
            '--tool-args-json',
            JSON.stringify(args),
            '--format',
            'json',
          ],
          home.env,
        );
      const optional = await call('slow_compute', { seconds: 0.3, label: era });
      expect(optional.code, optional.stderr).toBe(0);
      expect(JSON.parse(optional.stdout)).toMatchObject({ result: { content: [{ type: 'text', text: `Computed ${era} after 0.3s` }] } });

      const [gets, runs] = [proxy.forwarded('tasks/get'), counting.runs.get('failing_job') ?? 0];
      const required = await call('failing_job', {});
      // A task-only tool: it can only have run as a task, which the Inspector then followed with tasks/get.
      expect(required.stdout + required.stderr).toContain('The job failed: simulated tool error');
      expect(counting.runs.get('failing_job')).toBe(runs + 1);
      expect(proxy.forwarded('tasks/get')).toBeGreaterThan(gets);
    });
  });

  describe('mcpdo, the Inspector connection CLI 2.12.0', () => {
    const home = clientHome('mcpdo-home-');
    let env: NodeJS.ProcessEnv;
    const json = async (...args: string[]): Promise<Record<string, unknown>> => {
      const result = await mcpdo(['--format', 'json', '--connection', proxy.url, ...args], env);
      // What mcpdo said when it printed no JSON (exit code, stderr): the failure then explains itself.
      if (!result.stdout.trim()) throw new Error(`mcpdo ${args.join(' ')} printed nothing (exit ${String(result.code)}): ${result.stderr}`);
      return JSON.parse(result.stdout) as Record<string, unknown>;
    };
    beforeAll(async () => {
      env = await mcpdoPrivateEnv(home.env);
    });
    afterAll(async () => {
      await mcpdo(['daemon', 'stop'], env);
      home.dispose();
    });

    it('--era legacy: tools/call --task runs a task; tasks/get reads it afterwards in the same connection', async () => {
      expect((await mcpdo(['connect', proxy.url, '--era', 'legacy'], env)).code).toBe(0);
      const calls = proxy.forwarded('tools/call');
      const result = await json('tools/call', 'slow_compute', 'seconds:=0.3', 'label:=mcpdo', '--task');
      expect(result).toMatchObject({ content: [{ type: 'text', text: 'Computed mcpdo after 0.3s' }] });
      const taskId = (result._meta as Record<string, { taskId: string }>)['io.modelcontextprotocol/related-task']?.taskId;
      // After `--`: a task id may begin with '-' (base64url), which mcpdo would otherwise parse as an option (stop 42's CI).
      expect(await json('tasks/get', '--', taskId as string)).toMatchObject({ task: { taskId, status: 'completed' } });
      expect(proxy.forwarded('tools/call')).toBe(calls + 1);
      await mcpdo(['disconnect', proxy.url], env);
    });

    it('--era modern: a task-required tool runs as a task the server created', async () => {
      expect((await mcpdo(['connect', proxy.url, '--era', 'modern'], env)).code).toBe(0);
      const [gets, runs] = [proxy.forwarded('tasks/get'), counting.runs.get('failing_job') ?? 0];
      expect(await json('tools/call', 'failing_job')).toMatchObject({ isError: true, content: [{ text: 'The job failed: simulated tool error' }] });
      expect(counting.runs.get('failing_job')).toBe(runs + 1);
      expect(proxy.forwarded('tasks/get')).toBeGreaterThan(gets);
      await mcpdo(['disconnect', proxy.url], env);
    });
  });

  describe('@langchain/mcp-adapters (no task support)', () => {
    it('task-optional tools run inline; task-required tools are refused clearly before anything is sent', async () => {
      const client = new MultiServerMCPClient({ mcpServers: { tasks: { transport: 'http', url: proxy.url } }, throwOnLoadError: true });
      try {
        const tools = await client.getTools();
        const byName = new Map(tools.map((tool) => [tool.name.replace(/^.*__/, ''), tool]));
        const gets = proxy.forwarded('tasks/get');
        await expect(byName.get('slow_compute')?.invoke({ seconds: 0.2, label: 'langchain' })).resolves.toBe('Computed langchain after 0.2s');
        expect(proxy.forwarded('tasks/get')).toBe(gets); // inline: no task was created, none polled

        const calls = proxy.forwarded('tools/call');
        const refused = await byName
          .get('failing_job')
          ?.invoke({})
          .catch((caught: unknown) => caught);
        expect(String((refused as Error).message)).toMatch(/requires task-based execution/);
        expect(proxy.forwarded('tools/call')).toBe(calls);
      } finally {
        await client.close();
      }
    });
  });
});
