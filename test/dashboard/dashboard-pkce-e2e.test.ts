/**
 * The dashboard's JWT-mode sign-in in a real browser (issue 16): `serve --auth jwt --dashboard --dashboard-client-id`
 * against a real authorization server (oidc-provider on loopback). The browser is sent to the issuer with a PKCE
 * S256 challenge, `state` and `nonce`, signs in through the provider's own login and consent forms, and lands on the
 * dashboard as that subject, seeing only that owner's tasks. Negative controls: a callback whose `state` was not
 * started by this browser, and one replayed, sign nobody in.
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ensureBuilt } from '../cli/support.js';
import { TestAuthorizationServer, type TestClient } from '../helpers/authorization-server.js';
import { axeSerious, ensureDashboardBuilt, launchChromium } from '../helpers/browser.js';
import { freePort, type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { postModern } from '../helpers/wire.js';

const FIXTURE = resolve(import.meta.dirname, '../fixtures/dashboard-tools.mjs');
const TASKS = 'tasks:read tasks:cancel tasks:answer';
// Confidential clients whose client-credentials tokens (sub = client id) create tasks as alice and bob of acme.
const alice: TestClient = { clientId: 'alice', secret: 'alice-secret-0123456789abcdef0123456789', tenant: 'acme', scope: TASKS };
const bob: TestClient = { clientId: 'bob', secret: 'bob-secret-0123456789abcdef0123456789ab', tenant: 'acme', scope: TASKS };
const V2 = { capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } };

describe('dashboard sign-in with the authorization-code flow and PKCE (issue 16, --auth jwt)', () => {
  const temp = makeTempDir('mcp-tasks-dashboard-pkce-');
  let issuer: TestAuthorizationServer;
  let server: ServerProcess;
  let browser: Browser;
  let base: string;
  let aliceTask: string;
  let bobTask: string;

  beforeAll(async () => {
    ensureBuilt();
    ensureDashboardBuilt();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    issuer = await TestAuthorizationServer.start({
      clients: [alice, bob],
      publicClients: [{ clientId: 'mcp-tasks-dashboard', redirectUris: [`${base}/dashboard/callback`], tenant: 'acme', scope: TASKS }],
    });
    const log = join(temp.dir, 'tool.log');
    writeFileSync(log, '');
    server = await startServerProcess(
      join(temp.dir, 'data'),
      [
        '--auth',
        'jwt',
        '--issuer',
        issuer.issuer,
        '--audience',
        `${base}/mcp`,
        '--dashboard',
        '--dashboard-client-id',
        'mcp-tasks-dashboard',
        '--tools',
        FIXTURE,
        '--no-builtins',
      ],
      {},
      port,
    );
    const create = async (client: TestClient, note: string): Promise<string> => {
      const token = await issuer.token(client, { resource: `${base}/mcp`, scope: TASKS });
      const created = await postModern(server.url, 'tools/call', { name: 'slow_steps', arguments: { steps: 1, stepMs: 1, log, note } }, { ...V2, token });
      const taskId = created.body.result?.taskId as string | undefined;
      if (!taskId) throw new Error(`no task: ${JSON.stringify(created.body)}`);
      return taskId;
    };
    aliceTask = await create(alice, 'alice');
    bobTask = await create(bob, 'bob');
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await issuer?.close();
    temp.remove();
  });

  /** Through the provider's login and consent forms as `login`; ends on the dashboard. */
  async function signInAtIssuer(page: Page, login: string): Promise<void> {
    await page.goto(`${base}/dashboard`);
    await page.waitForURL(`${base}/dashboard/login`);
    await page.getByRole('link', { name: `Sign in with ${issuer.issuer}` }).click();
    await page.waitForURL((url) => url.origin === issuer.issuer, { timeout: 10_000 });
    await page.locator('input[name="login"]').fill(login);
    await page.locator('input[name="password"]').fill('any password');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    const consent = page.getByRole('button', { name: 'Continue' });
    await consent.or(page.locator('body')).first().waitFor();
    if ((await consent.count()) === 0) throw new Error(`no consent form at ${page.url()}: ${(await page.locator('body').innerText()).slice(0, 500)}`);
    await consent.click();
    await page.waitForURL(`${base}/dashboard`, { timeout: 10_000 });
  }

  it('signs in through the issuer’s login form (PKCE S256, state, nonce) and sees only that subject’s tasks', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const authorizeUrls: string[] = [];
    page.on('request', (request) => {
      if (request.url().startsWith(`${issuer.issuer}/auth`)) authorizeUrls.push(request.url());
    });
    await signInAtIssuer(page, 'alice');
    const authorize = new URL(authorizeUrls[0] ?? '');
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(authorize.searchParams.get('state')).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(authorize.searchParams.get('nonce')).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(authorize.searchParams.get('resource')).toBe(`${base}/mcp`);

    await expect.poll(() => page.locator('#who').textContent(), { timeout: 10_000 }).toBe(`${issuer.issuer}|alice|acme`);
    await page.locator(`tr[data-task-id="${aliceTask}"]`).waitFor({ timeout: 10_000 });
    expect(await page.locator(`tr[data-task-id="${bobTask}"]`).count()).toBe(0);
    await page.goto(`${base}/dashboard/tasks/${bobTask}`);
    await page.getByRole('heading', { name: 'Task not found' }).waitFor({ timeout: 10_000 });
    // The browser holds a session cookie, never the access token.
    const cookies = await context.cookies(`${base}/dashboard`);
    expect(cookies.map((cookie) => cookie.name).sort()).toContain('mcp_tasks_session');
    expect(cookies.find((cookie) => cookie.name === 'mcp_tasks_session')).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    expect(cookies.some((cookie) => cookie.name === 'mcp_tasks_sign_in')).toBe(false);
    await context.close();
  }, 60_000);

  it('a callback this browser did not start, or one replayed, signs nobody in (negative controls)', async () => {
    // Another browser's sign-in: it goes to the issuer, and its callback URL is then opened in a second browser.
    const victim = await browser.newContext();
    const attacker = await browser.newContext();
    const page = await attacker.newPage();
    let callback: string | undefined;
    page.on('request', (request) => {
      if (request.url().startsWith(`${base}/dashboard/callback`)) callback = request.url();
    });
    await signInAtIssuer(page, 'bob');
    expect(callback).toBeDefined();
    const planted = await victim.newPage();
    const answer = await planted.goto(callback as string);
    expect(answer?.status()).toBe(400);
    expect(await planted.locator('[role="alert"]').textContent()).toContain('not started in this browser');
    expect((await victim.cookies(`${base}/dashboard`)).some((cookie) => cookie.name === 'mcp_tasks_session')).toBe(false);
    // The same callback again in the browser that started it: the code and state were used up.
    const replay = await page.goto(callback as string);
    expect(replay?.status()).toBe(400);
    // A forged state with no sign-in behind it.
    const forged = await fetch(`${base}/dashboard/callback?code=abc&state=AAAAAAAAAAAAAAAAAAAAAA`, {
      headers: { cookie: 'mcp_tasks_sign_in=AAAAAAAAAAAAAAAAAAAAAA' },
      redirect: 'manual',
    });
    expect(forged.status).toBe(400);
    expect(forged.headers.get('set-cookie') ?? '').not.toContain('mcp_tasks_session=');
    await victim.close();
    await attacker.close();
  }, 60_000);

  it('the JWT-mode sign-in page (issuer button and the paste fallback) has no serious axe issue', async () => {
    const page = await browser.newPage();
    await page.goto(`${base}/dashboard/login`);
    await page.getByLabel('Access token').waitFor();
    expect(await axeSerious(page)).toEqual([]);
    await page.close();
  });
});
