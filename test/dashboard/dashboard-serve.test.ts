/**
 * `dashboard` as a setting of the one configuration (issue 16 with issue 15): the config file's `dashboard: true`,
 * `MCP_TASKS_DASHBOARD` and `--dashboard` turn it on in a real `mcp-tasks serve` process; its routes sit beside
 * `/healthz`, `/readyz`, `/metrics` and `/mcp`, which never need a dashboard session; a token-file entry with
 * `"scopes": ["admin:read"]` signs in and sees another owner's task read-only.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ensureBuilt, MAIN } from '../cli/support.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { everythingStdio } from '../helpers/upstream-servers.js';
import { postModern } from '../helpers/wire.js';

const ALICE = 'alice-token-0123456789abcdef';
const AUDITOR = 'auditor-token-0123456789abcd';
const V2 = { capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } };

describe('serve: dashboard from the configuration, beside the probes (issue 16)', () => {
  const temp = makeTempDir('mcp-tasks-dashboard-serve-');
  const servers: ServerProcess[] = [];
  let tokens: string;

  beforeAll(() => {
    ensureBuilt();
    tokens = join(temp.dir, 'tokens.json');
    writeFileSync(
      tokens,
      JSON.stringify({
        tokens: [
          { token: ALICE, issuer: 'https://issuer.test', subject: 'alice', tenant: 'acme' },
          { token: AUDITOR, issuer: 'https://issuer.test', subject: 'auditor', tenant: 'acme', scopes: ['admin:read'] },
        ],
      }),
    );
  });

  afterAll(async () => {
    for (const server of servers) await server.stop();
    temp.remove();
  });

  async function start(name: string, args: string[], env: Record<string, string> = {}): Promise<{ server: ServerProcess; base: string }> {
    const server = await startServerProcess(join(temp.dir, name), ['--fixtures', 'conformance', '--drain-ms', '100', ...args], env);
    servers.push(server);
    return { server, base: server.url.replace(/\/mcp$/, '') };
  }

  it('config file "dashboard": true with a token file: probes and metrics answer without a session; an admin:read entry sees alice’s task read-only', async () => {
    const config = join(temp.dir, 'mcp-tasks.json');
    writeFileSync(config, JSON.stringify({ dashboard: true, auth: `tokens:${tokens}` }));
    const { server, base } = await start('file', ['--config', config]);
    expect(server.log()).toMatch(/dashboard: http:\/\/127\.0\.0\.1:\d+\/dashboard/);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    expect(await (await fetch(`${base}/metrics`)).text()).toContain('# TYPE');
    // /mcp is still MCP behind bearer auth; /dashboard is the dashboard behind its sign-in.
    expect((await postModern(server.url, 'server/discover')).status).toBe(401);
    expect((await fetch(`${base}/dashboard`, { redirect: 'manual' })).headers.get('location')).toBe('/dashboard/login');
    expect((await fetch(`${base}/dashboard/login`)).status).toBe(200);

    const created = await postModern(server.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 30 } }, { ...V2, token: ALICE });
    const taskId = created.body.result?.taskId as string;
    expect(taskId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const login = await fetch(`${base}/dashboard/login`, {
      method: 'POST',
      body: new URLSearchParams({ token: AUDITOR }),
      redirect: 'manual',
      headers: { origin: base },
    });
    expect(login.status).toBe(303);
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const session: any = await (await fetch(`${base}/dashboard/api/session`, { headers: { cookie } })).json();
    expect(session).toMatchObject({ owner: 'https://issuer.test|auditor|acme', scopes: ['admin:read'] });
    const page: any = await (await fetch(`${base}/dashboard/api/tasks/${taskId}`, { headers: { cookie } })).json();
    expect(page.task.taskId).toBe(taskId);
    expect(page.permissions).toEqual({ cancel: false, answer: false });
    const refused = await fetch(`${base}/dashboard/api/tasks/${taskId}/cancel`, {
      method: 'POST',
      headers: { cookie, 'x-csrf-token': session.csrf, origin: base, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(refused.status).toBe(403);
  });

  it('issue 28: with --upstream, the dashboard reports the upstream connections of its process (what /readyz shows)', async () => {
    const { base } = await start('upstream', ['--dashboard', '--auth', `tokens:${tokens}`, '--upstream', everythingStdio('everything')]);
    const login = await fetch(`${base}/dashboard/login`, {
      method: 'POST',
      body: new URLSearchParams({ token: ALICE }),
      redirect: 'manual',
      headers: { origin: base },
    });
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const view: any = await (await fetch(`${base}/dashboard/api/upstreams`, { headers: { cookie } })).json();
    const readyz: any = await (await fetch(`${base}/readyz`)).json();
    expect(view.upstreams).toEqual(readyz.checks.executor.upstreams);
    expect(view.upstreams).toEqual([expect.objectContaining({ name: 'everything', transport: 'stdio', state: 'ready' })]);
  });

  it('MCP_TASKS_DASHBOARD=1 turns it on; without any of the three, /dashboard is not served (and the probes are)', async () => {
    const on = await start('env', [], { MCP_TASKS_DASHBOARD: '1' });
    expect((await fetch(`${on.base}/dashboard`)).status).toBe(200);
    const off = await start('off', []);
    expect(off.server.log()).not.toContain('dashboard:');
    expect((await fetch(`${off.base}/dashboard`)).status).toBe(404);
    expect((await fetch(`${off.base}/healthz`)).status).toBe(200);
  });

  it('--dashboard with --stdio is a usage error (exit 64) naming the setting', () => {
    const run = spawnSync(process.execPath, [MAIN, 'serve', '--stdio', '--dashboard', '--data-dir', join(temp.dir, 'stdio')], { encoding: 'utf8', input: '' });
    expect(run.status).toBe(64);
    expect(run.stderr).toContain('does not apply to --stdio');
  });

  it('dashboardOptions.clientId (the PKCE sign-in) without --auth jwt is a usage error (exit 64), from the config file too', () => {
    const file = join(temp.dir, 'client-id.json');
    writeFileSync(file, JSON.stringify({ dashboard: true, dashboardOptions: { clientId: 'mcp-tasks-dashboard' } }));
    const run = spawnSync(process.execPath, [MAIN, 'serve', '--config', file, '--port', '0', '--data-dir', join(temp.dir, 'client-id')], {
      encoding: 'utf8',
      input: '',
    });
    expect(run.status).toBe(64);
    expect(run.stderr).toContain('it needs --auth jwt');
    const flag = spawnSync(
      process.execPath,
      [MAIN, 'serve', '--dashboard', '--dashboard-client-id', 'x', '--port', '0', '--data-dir', join(temp.dir, 'client-id-flag')],
      { encoding: 'utf8', input: '' },
    );
    expect(flag.status).toBe(64);
  });
});
