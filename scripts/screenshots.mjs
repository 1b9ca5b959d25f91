// `npm run screenshots`: start a real `mcp-tasks serve --dashboard` on a free port (temp data dir, the dashboard
// test tools plus the built-ins), create a few tasks with the real CLI — one running with progress, one waiting
// for an approval, one finished analyze_logs run over a generated corpus — and let headless Debian Chromium
// (playwright-core, /usr/bin/chromium) capture the list, two task pages, the operations view (a payment whose
// outcome is unknown, one reconciled), the overview's charts and the kill-switch panel (the on-call viewer has
// admin:read and admin:write) into docs/images/.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { chromium } from 'playwright-core';

const root = resolve(import.meta.dirname, '..');
const main = join(root, 'dist/cli/main.js');
const chromiumPath = process.env.MCP_TASKS_CHROMIUM ?? '/usr/bin/chromium';
if (!existsSync(chromiumPath)) {
  console.error(`Chromium not found at ${chromiumPath}: install it with \`apt-get install -y chromium\``);
  process.exit(1);
}
const temp = mkdtempSync(join(tmpdir(), 'mcp-tasks-screens-'));
const port = await new Promise((done) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port: free } = probe.address();
    probe.close(() => done(free));
  });
});
const token = 'screenshot-token-0123456789';
writeFileSync(
  join(temp, 'tokens.json'),
  JSON.stringify({
    tokens: [
      {
        token,
        issuer: 'https://issuer.example',
        subject: 'dana',
        tenant: 'acme',
        scopes: ['tasks:read', 'tasks:cancel', 'tasks:answer', 'admin:read', 'admin:write'],
      },
    ],
  }),
);
execFileSync(process.execPath, [main, 'demo-corpus', '--out', join(temp, 'corpus'), '--files', '20', '--lines', '2000'], { stdio: 'ignore' });
const server = spawn(
  process.execPath,
  [
    main,
    'serve',
    '--port',
    String(port),
    '--data-dir',
    join(temp, 'data'),
    '--dashboard',
    '--auth',
    `tokens:${join(temp, 'tokens.json')}`,
    '--tools',
    join(root, 'test/fixtures/dashboard-tools.mjs'),
    '--root',
    temp,
    '--log-level',
    'warn',
  ],
  { stdio: 'ignore' },
);
const base = `http://127.0.0.1:${port}`;
const env = { ...process.env, MCP_TASKS_TOKEN: token, MCP_TASKS_CLIENT_STATE: join(temp, 'journal.json') };
const call = (tool, args, protocol = '2026-07-28') =>
  /"taskId"\s*:\s*"([A-Za-z0-9_-]+)"/.exec(
    execFileSync(process.execPath, [main, 'call', tool, '--url', `${base}/mcp`, '--protocol', protocol, '--args', JSON.stringify(args), '--detach', '--json'], {
      env,
      encoding: 'utf8',
    }),
  )?.[1];

const browser = await chromium.launch({
  executablePath: chromiumPath,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
});
try {
  for (let i = 0; ; i += 1) {
    try {
      if ((await fetch(`${base}/dashboard/login`)).ok) break;
    } catch {
      // not up yet
    }
    if (i > 200) throw new Error('server did not start');
    await new Promise((done) => setTimeout(done, 100));
  }
  const analysis = call('analyze_logs', { path: join(temp, 'corpus') });
  call('slow_steps', { steps: 3, stepMs: 100, log: join(temp, 'tool.log') }, '2025-11-25');
  const approval = call('approve_change', { change: 'rotate the signing keys of billing-api' });
  call('slow_steps', { steps: 600, stepMs: 200, log: join(temp, 'tool.log'), note: 'nightly export' });
  const bank = join(temp, 'bank.txt');
  writeFileSync(bank, '');
  const paid = call('record_payment', { ledger: bank, amount: 120 });
  call('record_payment', { ledger: bank, amount: 75 });
  const page = await (await browser.newContext({ viewport: { width: 1360, height: 760 } })).newPage();
  await page.goto(`${base}/dashboard/login`);
  await page.getByLabel('Bearer token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${base}/dashboard`);
  await page.waitForTimeout(2500);
  await page.screenshot({ path: join(root, 'docs/images/dashboard-list.png') });
  await page.goto(`${base}/dashboard/tasks/${approval}`);
  await page.locator('form.answer').waitFor();
  await page.screenshot({ path: join(root, 'docs/images/dashboard-task-input.png'), fullPage: true });
  await page.goto(`${base}/dashboard/tasks/${analysis}`);
  await page.locator('h1 .badge', { hasText: 'completed' }).waitFor({ timeout: 60_000 });
  await page.screenshot({ path: join(root, 'docs/images/dashboard-task-result.png') });
  // Operations: reconcile the first payment after the "bank" has its record; the second stays unknown.
  await page.goto(`${base}/dashboard/operations?status=all`);
  const paidRow = page.locator('tr[data-operation-id]', { has: page.locator(`a[href="/dashboard/tasks/${paid}"]`) });
  for (let i = 0; (await paidRow.count()) === 0; i += 1) {
    if (i > 100) throw new Error('the payment operation did not appear');
    await page.waitForTimeout(200);
    await page.reload();
  }
  writeFileSync(bank, `${await paidRow.getAttribute('data-operation-id')} PAY-20261202-0042\n`);
  await paidRow.getByRole('button', { name: /Reconcile/ }).click();
  await page.locator('#reconcile-status', { hasText: 'confirmed' }).waitFor();
  await page.screenshot({ path: join(root, 'docs/images/dashboard-operations.png'), fullPage: true });
  await page.goto(`${base}/dashboard/overview`);
  await page.locator('#chart-timing').waitFor();
  await page.waitForTimeout(500);
  await page.screenshot({ path: join(root, 'docs/images/dashboard-overview.png'), fullPage: true });
  // Kill switch: one tool switched off from the page (fallback reject, with a reason).
  await page.goto(`${base}/dashboard/kill-switch`);
  await page.getByLabel('Tool').selectOption('record_payment');
  await page.getByLabel('Fallback').selectOption('reject');
  await page.getByLabel('Reason (optional)').fill('INC-4711: the bank API double-books; stop new payment tasks');
  await page.getByRole('button', { name: 'Turn on' }).click();
  await page.locator('#ks-state[data-state="partial"]').waitFor();
  await page.screenshot({ path: join(root, 'docs/images/dashboard-kill-switch.png'), fullPage: true });
  console.log(
    'wrote docs/images/dashboard-list.png, docs/images/dashboard-task-input.png, docs/images/dashboard-task-result.png, docs/images/dashboard-operations.png, docs/images/dashboard-overview.png, docs/images/dashboard-kill-switch.png',
  );
} finally {
  await browser.close();
  server.kill('SIGTERM');
  rmSync(temp, { recursive: true, force: true });
}
