/**
 * The dashboard's kill-switch panel (issue 16 "toggle the kill switch", issue 15 item 6) in headless Debian
 * Chromium against a real `mcp-tasks serve --dashboard --auth tokens:…` process on a real SQLite file: an
 * admin:write viewer turns the switch on from the page → a new task-augmented 2026-07-28 call gets -31003
 * (`kill_switch`) → off from the page → calls are tasks again; a change made through the `/admin/kill-switch` API
 * reaches the open page over its event stream; an admin:read viewer sees the state without a toggle and a forged
 * POST (even with its valid CSRF token) is refused; a viewer without admin scopes never sees the panel (404).
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { cliRunner, ensureBuilt } from '../cli/support.js';
import { axeSerious, ensureDashboardBuilt, launchChromium } from '../helpers/browser.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { postModern } from '../helpers/wire.js';

const FIXTURE = resolve(import.meta.dirname, '../fixtures/dashboard-tools.mjs');
const ADMIN = 'ks-admin-token-0123456789abcdef';
const AUDITOR = 'ks-auditor-token-0123456789abcd';
const ALICE = 'ks-alice-token-0123456789abcdef';
const TASKS = ['tasks:read', 'tasks:cancel', 'tasks:answer'];

describe('dashboard kill-switch panel in a real browser (issue 16, issue 15 item 6)', () => {
  const temp = makeTempDir('mcp-tasks-dashboard-ks-');
  const log = join(temp.dir, 'tool.log');
  let server: ServerProcess;
  let base: string;
  let browser: Browser;
  const contexts: Record<string, BrowserContext> = {};

  async function signIn(token: string): Promise<BrowserContext> {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/dashboard/login`);
    await page.getByLabel('Bearer token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/dashboard`);
    await page.close();
    return context;
  }

  /** A new task-augmented 2026-07-28 call of `slow_steps`: a task, or the error the server answered. */
  async function call(): Promise<{ resultType?: unknown; error?: { code: number; data?: unknown } }> {
    const answer = await postModern(server.url, 'tools/call', { name: 'slow_steps', arguments: { steps: 1, stepMs: 10, log } }, { token: ALICE });
    return answer.body.error ? { error: answer.body.error } : { resultType: answer.body.result?.resultType };
  }

  async function openPanel(context: BrowserContext): Promise<Page> {
    const page = await context.newPage();
    await page.goto(`${base}/dashboard`);
    await expect.poll(() => page.locator('#live').textContent(), { timeout: 10_000 }).toBe('Live');
    await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Kill switch' }).click();
    await page.waitForURL(`${base}/dashboard/kill-switch`);
    await page.locator('#ks-state').waitFor();
    return page;
  }

  /** POST `body` to the panel's API from `page` (its cookie; its session's CSRF token unless `csrf` is false): status and error. */
  const postFromPage = (page: Page, body: string, csrf = true): Promise<[number, string | undefined]> =>
    page.evaluate(
      async ([text, withCsrf]) => {
        const session = (await (await fetch('/dashboard/api/session')).json()) as { csrf: string };
        const answer = await fetch('/dashboard/api/kill-switch', {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(withCsrf ? { 'x-csrf-token': session.csrf } : {}) },
          body: text,
        });
        return [answer.status, ((await answer.json().catch(() => ({}))) as { error?: string }).error] as [number, string | undefined];
      },
      [body, csrf] as const,
    );

  const adminApi = (method: string, query = '', body?: object) =>
    fetch(`${base}/admin/kill-switch${query}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });

  beforeAll(async () => {
    ensureBuilt();
    ensureDashboardBuilt();
    const tokens = join(temp.dir, 'tokens.json');
    const who = (subject: string) => ({ issuer: 'https://issuer.test', subject, tenant: 'acme' });
    writeFileSync(
      tokens,
      JSON.stringify({
        tokens: [
          { token: ADMIN, ...who('oncall'), scopes: [...TASKS, 'admin:read', 'admin:write'] },
          { token: AUDITOR, ...who('auditor'), scopes: ['tasks:read', 'admin:read'] },
          { token: ALICE, ...who('alice') },
        ],
      }),
    );
    writeFileSync(log, '');
    browser = await launchChromium();
    server = await startServerProcess(join(temp.dir, 'data'), ['--dashboard', '--auth', `tokens:${tokens}`, '--tools', FIXTURE, '--no-builtins']);
    base = server.url.replace(/\/mcp$/, '');
    contexts.admin = await signIn(ADMIN);
    contexts.auditor = await signIn(AUDITOR);
    contexts.alice = await signIn(ALICE);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    temp.remove();
  });

  it('admin:write: on from the page (reject) → a new task call gets -31003 kill_switch; off from the page → tasks again; axe finds nothing serious', async () => {
    // Negative control first: with the switch off the same call is a task, so the -31003 below is the switch's doing.
    expect(await call()).toEqual({ resultType: 'task' });
    const page = await openPanel(contexts.admin as BrowserContext);
    expect(await page.locator('#ks-state').getAttribute('data-state')).toBe('off');
    expect(await axeSerious(page)).toEqual([]);

    await page.getByLabel('Tool').selectOption('');
    await page.getByLabel('Fallback').selectOption('reject');
    await page.getByLabel('Reason (optional)').fill('incident <b>42</b>');
    await page.getByRole('button', { name: 'Turn on' }).click();
    await expect.poll(() => page.locator('#ks-state').getAttribute('data-state'), { timeout: 10_000 }).toBe('on');
    const row = page.locator('#ks-table tr[data-scope="*"]');
    expect(await row.textContent()).toContain('reject (-31003)');
    // Who set it is the viewer's own identity (the server's, not the browser's); the reason renders as text.
    expect(await row.textContent()).toContain('https://issuer.test|oncall|acme');
    expect(await row.locator('td.message').textContent()).toBe('incident <b>42</b>');
    expect(await page.locator('#ks-table b').count()).toBe(0);
    expect(await axeSerious(page)).toEqual([]);

    // The serving process answers from the switch at once (this process wrote it and re-read its cache).
    expect(await call()).toMatchObject({ error: { code: -31003, data: { reason: 'kill_switch', tool: 'slow_steps' } } });
    // The admin API reads the same stored switch.
    expect(await (await adminApi('GET')).json()).toMatchObject({
      state: 'on',
      switches: [{ scope: '*', fallback: 'reject', reason: 'incident <b>42</b>', setBy: 'https://issuer.test|oncall|acme' }],
    });

    // Bad input through the same checks as the admin API: 400 with the reason, nothing changed.
    const bad = [];
    for (const body of ['{"action":"on","tool":"no_such_tool"}', '{"action":"on","fallback":"maybe"}', '{"action":"toggle"}', 'not json'])
      bad.push(await postFromPage(page, body));
    expect(bad.map(([status]) => status)).toEqual([400, 400, 400, 400]);
    expect(bad[0]?.[1]).toContain('is not served here');
    expect(await (await adminApi('GET')).json()).toMatchObject({ state: 'on', switches: [{ scope: '*' }] });

    await page.getByRole('button', { name: 'Turn off the kill switch for every tool' }).click();
    await expect.poll(() => page.locator('#ks-state').getAttribute('data-state'), { timeout: 10_000 }).toBe('off');
    expect(await call()).toEqual({ resultType: 'task' });
    // Audited like the admin API's changes: the viewer, on then off, the global scope.
    const audit = (await (
      await fetch(`${base}/admin/audit?owner=${encodeURIComponent('https://issuer.test|oncall|acme')}`, { headers: { authorization: `Bearer ${ADMIN}` } })
    ).json()) as { entries: Array<{ kind: string; outcome: string; detail: unknown }> };
    expect(audit.entries.filter((entry) => entry.kind === 'kill_switch').map(({ outcome, detail }) => [outcome, detail])).toEqual([
      ['on', { scope: '*', fallback: 'reject' }],
      ['off', { scope: '*' }],
    ]);
    await page.close();
  }, 90_000);

  it('a per-tool switch set by the CLI on the store (another process) appears on the open page over its event stream, no reload; its removal through the admin API too', async () => {
    const page = await openPanel(contexts.admin as BrowserContext);
    const reloads: string[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/dashboard/api/kill-switch')) reloads.push(request.method());
    });
    const started = Date.now();
    // The CLI's --store form: a separate process writes the SQLite file; the server learns it at its next refresh.
    const set = await cliRunner(process.env).cli([
      'admin',
      'kill-switch',
      'on',
      '--tool',
      'slow_steps',
      '--fallback',
      'sync',
      '--reason',
      'cli',
      '--data-dir',
      join(temp.dir, 'data'),
      '--no-builtins',
      '--tools',
      FIXTURE,
      '--log-level',
      'warn',
    ]);
    expect(set.code, set.stderr).toBe(0);
    const written = Date.now();
    await expect.poll(() => page.locator('#ks-state').getAttribute('data-state'), { timeout: 10_000 }).toBe('partial');
    // Reported, not asserted tightly: the cache refresh is 500 ms; CI load decides the figure.
    console.log(
      `dashboard: kill switch set by the CLI on the store shown on the open page ${Date.now() - written} ms after the CLI exited (${written - started} ms CLI run)`,
    );
    expect(await page.locator('#ks-table tr[data-scope="slow_steps"] td').nth(3).textContent()).toBe('local');
    expect(await page.locator('#ks-table tr[data-scope="slow_steps"]').textContent()).toContain('sync (run inline where allowed)');
    expect((await adminApi('DELETE', '?tool=slow_steps')).status).toBe(200);
    await expect.poll(() => page.locator('#ks-state').getAttribute('data-state'), { timeout: 10_000 }).toBe('off');
    // The page learnt both changes from its stream, not by asking the API again.
    expect(reloads).toEqual([]);
    await page.close();
  }, 60_000);

  it('admin:read: sees the state but no toggle; a forged POST with its own valid CSRF token is refused (403) and changes nothing', async () => {
    expect((await adminApi('PUT', '', { reason: 'set by the admin for the auditor to see' })).status).toBe(200);
    try {
      const page = await openPanel(contexts.auditor as BrowserContext);
      expect(await page.locator('#ks-state').getAttribute('data-state')).toBe('on');
      expect(await page.locator('#ks-form').count()).toBe(0);
      expect(await page.getByRole('button', { name: /Turn (on|off)/ }).count()).toBe(0);
      expect(await page.locator('#ks-read-only').textContent()).toContain('admin:write');
      expect(await axeSerious(page)).toEqual([]);
      expect((await postFromPage(page, '{"action":"off"}'))[0]).toBe(403);
      expect(await (await adminApi('GET')).json()).toMatchObject({ state: 'on' });
      await page.close();

      // Allowed twin: the same POST from the admin's page works, so the 403 above is the scope rule's.
      const admin = await (contexts.admin as BrowserContext).newPage();
      await admin.goto(`${base}/dashboard/kill-switch`);
      await admin.locator('#ks-state').waitFor();
      expect((await postFromPage(admin, '{"action":"off"}'))[0]).toBe(200);
      expect(await (await adminApi('GET')).json()).toMatchObject({ state: 'off' });
      // Without the CSRF token even the admin is refused.
      expect((await postFromPage(admin, '{"action":"on"}', false))[0]).toBe(403);
      expect(await (await adminApi('GET')).json()).toMatchObject({ state: 'off' });
      await admin.close();
    } finally {
      await adminApi('DELETE');
    }
  }, 60_000);

  it('no admin scope: no nav link, the page says not found, GET and POST answer 404 (the panel is not disclosed)', async () => {
    const page = await (contexts.alice as BrowserContext).newPage();
    await page.goto(`${base}/dashboard`);
    await expect.poll(() => page.locator('#live').textContent(), { timeout: 10_000 }).toBe('Live');
    expect(await page.getByRole('link', { name: 'Kill switch' }).count()).toBe(0);
    await page.goto(`${base}/dashboard/kill-switch`);
    await page.getByRole('heading', { name: 'Not found' }).waitFor();
    const read = await page.evaluate(async () => (await fetch('/dashboard/api/kill-switch')).status);
    expect([read, (await postFromPage(page, '{"action":"on"}'))[0]]).toEqual([404, 404]);
    expect(await (await adminApi('GET')).json()).toMatchObject({ state: 'off' });
    await page.close();
  }, 60_000);
});
