/**
 * Issue 26 items 15 and 16 in a real browser (headless Debian Chromium through playwright-core) against an
 * in-process server with the dashboard mounted (no authentication: the one anonymous viewer): the first view shows
 * its data with every API request and the event stream held unanswered; a result the page shows only part of
 * links to the whole one; a long receipt stays readable; a run's progress entries fold into one timeline row.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { silentLogger } from '../../src/core/logger.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { axeSerious, ensureDashboardBuilt, launchChromium } from '../helpers/browser.js';
import { serveDashboard, type ServedDashboard } from '../helpers/dashboard-server.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

/** A statusMessage that would end the page's JSON data block and run a script if it were written unescaped. */
const HOSTILE = '</script><script>window.__pwned = 1</script><!--';

/** A receipt as a bank might return it: long references, a nested list — more than a table cell's width. */
const RECEIPT = {
  reference: 'PAY-2026-12-06-7f3a9c1e-4b2d-4e8f-9a6b-0c1d2e3f4a5b',
  confirmation: 'CONF-'.concat('ABCDEF0123456789'.repeat(8)),
  lines: Array.from({ length: 12 }, (_, index) => ({ item: `line ${index + 1}`, amount: (index + 1) * 10, currency: 'EUR' })),
};

/** A result text of `chars` characters, numbered lines so a cut anywhere shows. */
const longText = (chars: number): string =>
  Array.from({ length: Math.ceil(chars / 20) }, (_, index) => `line ${String(index).padStart(13, '0')}`)
    .join('\n')
    .slice(0, chars);
/** Results above this many bytes of JSON are stored in chunks, their stored form a preview (issue 10 §2). */
const MAX_RESULT_BYTES = 200_000;

const tools = [
  defineTool({
    name: 'long_report',
    description: 'Returns a text of `chars` characters.',
    execution: 'task-optional',
    inputSchema: z.object({ chars: z.number().int().min(1) }),
    async run({ chars }) {
      return textResult(longText(chars));
    },
  }),
  defineTool({
    name: 'pay_with_receipt',
    description: 'Pays; the system of record confirms with a long receipt.',
    execution: 'task-optional',
    journaled: true,
    operations: { 'bank.pay': { reconcile: async () => ({ status: 'unknown' as const, detail: 'not asked here' }) } },
    inputSchema: z.object({}),
    async run(_args, ctx) {
      await ctx.operation({ key: 'pay', effect: 'bank.pay', target: 'acct-42' }, async () => RECEIPT);
      return textResult('paid');
    },
  }),
  defineTool({
    name: 'announce',
    description: 'Says something hostile as its first message, then completes.',
    execution: 'task-optional',
    inputSchema: z.object({ text: z.string() }),
    immediateResponse: ({ text }) => text,
    async run({ text }) {
      return textResult(`said ${text.length} characters`);
    },
  }),
  defineTool({
    name: 'counted_steps',
    description: 'Reports progress "step (i/N)" N times, then completes.',
    execution: 'task-optional',
    inputSchema: z.object({ steps: z.number().int().min(1) }),
    async run({ steps }, ctx) {
      for (let step = 1; step <= steps; step++) {
        ctx.progress(step, steps, 'step');
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      return textResult(`${steps} steps`);
    },
  }),
];

describe('dashboard details in a real browser (issue 26 items 15, 16)', () => {
  let running: RunningTasksServer;
  let dashboard: ServedDashboard | undefined;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    ensureDashboardBuilt();
    browser = await launchChromium();
    running = await startTasksServer({ tools, limits: { pollIntervalMs: 50, statusFlushIntervalMs: 20, maxResultBytes: MAX_RESULT_BYTES } });
    dashboard = await serveDashboard({
      service: running.server.service.viewer,
      anonymous: { ownerKey: 'anonymous', scopes: [] },
      allowedHosts: ['127.0.0.1'],
      logger: silentLogger,
    });
    base = dashboard.base;
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await dashboard?.close();
    await running?.close();
  });

  async function task(name: string, args: Record<string, unknown>): Promise<string> {
    const created = await postModern(running.url, 'tools/call', { name, arguments: args });
    const taskId = created.body.result?.taskId;
    if (typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(created.body)}`);
    await pollModernTask(running.url, taskId);
    return taskId;
  }

  /** A page whose requests to the dashboard's API (its event stream included) are never answered. */
  async function withApiHeld(): Promise<{ page: Page; held: string[] }> {
    const page = await browser.newPage();
    const held: string[] = [];
    await page.route('**/dashboard/api/**', (route) => void held.push(new URL(route.request().url()).pathname));
    return { page, held };
  }

  it('item 15: the task list and a task page show their data with the event stream and every API request held unanswered; a hostile statusMessage stays text', async () => {
    const hostile = await task('announce', { text: HOSTILE });
    const stepped = await task('counted_steps', { steps: 3 });
    const { page, held } = await withApiHeld();
    await page.goto(`${base}/dashboard`, { waitUntil: 'domcontentloaded' });
    const rows = page.locator('tr[data-task-id]');
    await rows.first().waitFor({ timeout: 5_000 });
    expect(await rows.evaluateAll((all) => all.map((row) => row.getAttribute('data-task-id')))).toEqual([stepped, hostile]);
    // (Status text is sanitised into one line when stored; what is left is still shown as text, never run.)
    expect(await page.locator(`tr[data-task-id="${hostile}"] td.message`).textContent()).toContain('window.__pwned = 1');
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    // The stream was asked for (and is still held): nothing the rows show came from it.
    expect(held).toContain('/dashboard/api/events');
    expect(held.filter((path) => path !== '/dashboard/api/events')).toEqual([]);

    await page.goto(`${base}/dashboard/tasks/${stepped}`, { waitUntil: 'domcontentloaded' });
    await page.locator('h1 .badge', { hasText: 'completed' }).waitFor({ timeout: 5_000 });
    expect(await page.locator('pre.result-text').textContent()).toBe('3 steps');
    await page.close();
  }, 60_000);

  for (const [what, chars] of [
    ['longer than the page shows (100,000 characters, stored whole)', 100_000],
    ['stored in chunks (300,000 characters, more than maxResultBytes: its stored form is a preview)', 300_000],
  ] as const) {
    it(`item 15: a result ${what}: the page links to the full result, which is the tool's whole text`, async () => {
      const taskId = await task('long_report', { chars });
      const page = await browser.newPage();
      await page.goto(`${base}/dashboard/tasks/${taskId}`);
      const link = page.locator('section[aria-labelledby="res-h"] a.full-result');
      await link.waitFor({ timeout: 5_000 });
      const href = (await link.getAttribute('href')) as string;
      // The link opens the answer itself (not a view of the page), and that answer is the whole result.
      await link.click();
      await page.waitForURL(`${base}${href}`);
      const whole = JSON.parse((await page.locator('body').innerText()).trim()) as { content: Array<{ type: string; text: string }> };
      expect(whole.content[0]?.text).toBe(longText(chars));
      await page.close();
    }, 60_000);
  }

  it('item 15: a short result has no "full result" link (the page shows it whole)', async () => {
    const taskId = await task('long_report', { chars: 500 });
    const page = await browser.newPage();
    await page.goto(`${base}/dashboard/tasks/${taskId}`);
    await page.locator('pre.result-text').waitFor({ timeout: 5_000 });
    expect(await page.locator('pre.result-text').textContent()).toBe(longText(500));
    expect(await page.locator('a.full-result').count()).toBe(0);
    await page.close();
  }, 60_000);

  it("item 16: a long receipt in the task page's narrow Domain outcome panel is readable — its facts wrap in the cell, opened it shows whole, nothing is cut off", async () => {
    const paid = await task('pay_with_receipt', {});
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${base}/dashboard/tasks/${paid}`);
    const cell = page.locator('section.domain tr[data-operation-id] td.message');
    await cell.waitFor({ timeout: 5_000 });
    expect(await cell.innerText()).toContain(RECEIPT.reference);
    // Whatever folds the receipt (a disclosure), opened: every box in the cell shows all of its content.
    for (const summary of await cell.locator('summary').all()) await summary.click();
    const cut = await cell.evaluate((td) =>
      [td, ...td.querySelectorAll('*')]
        // (Text for screen readers only is a 1 px box by design.)
        .filter((element) => !element.classList.contains('visually-hidden'))
        .filter((element) => element.scrollHeight > element.clientHeight + 1 || element.scrollWidth > element.clientWidth + 1)
        .map((element) => `${element.tagName} ${element.scrollWidth}x${element.scrollHeight} in ${element.clientWidth}x${element.clientHeight}`),
    );
    expect(cut).toEqual([]);
    const shown = await cell.innerText();
    expect(shown).toContain(RECEIPT.confirmation);
    expect(shown).toContain('"item": "line 12"');
    expect(await axeSerious(page)).toEqual([]);
    await page.close();
  }, 60_000);

  it("item 16: a run's progress messages fold into one timeline row that shows the latest and their count, and opens to all of them", async () => {
    const stepped = await task('counted_steps', { steps: 50 });
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${base}/dashboard/tasks/${stepped}`);
    const events = (
      await page.evaluate(async (id) => (await (await fetch(`/dashboard/api/tasks/${id}`)).json()) as { events: Array<{ kind: string }> }, stepped)
    ).events;
    const messages = events.filter((event) => event.kind === 'message').length;
    // The run wrote many statusMessages (one per 20 ms flush): what flooded the timeline.
    expect(messages).toBeGreaterThanOrEqual(10);
    const rows = page.locator('section[aria-labelledby="tl-h"] > ol.timeline > li');
    await rows.first().waitFor({ timeout: 5_000 });
    expect(await rows.count()).toBe(events.length - messages + 1);
    const folded = page.locator('section[aria-labelledby="tl-h"] > ol.timeline > li.messages');
    const summary = folded.locator('summary');
    expect(await summary.innerText()).toContain('step (50/50)');
    expect(await summary.innerText()).toContain(`the latest of ${messages} messages`);
    expect(await folded.locator('ol.timeline > li').first().isVisible()).toBe(false);
    await summary.click();
    expect(await folded.locator('ol.timeline > li').count()).toBe(messages);
    expect(await folded.locator('ol.timeline > li').first().isVisible()).toBe(true);
    expect(await axeSerious(page)).toEqual([]);
    await page.close();
  }, 60_000);
});
