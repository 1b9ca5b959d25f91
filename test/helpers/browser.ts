import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { type Browser, chromium, type Page } from 'playwright-core';

/** Debian's Chromium (`apt-get install -y chromium`); Playwright's own browser download is not used. */
export const CHROMIUM = process.env.MCP_TASKS_CHROMIUM ?? '/usr/bin/chromium';

const ROOT = resolve(import.meta.dirname, '../..');
const ASSET = join(ROOT, 'dist/dashboard/assets/app.js');
const AXE = join(ROOT, 'node_modules/axe-core/axe.min.js');

function newest(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce(
    (max, entry) => Math.max(max, entry.isDirectory() ? newest(join(dir, entry.name)) : statSync(join(dir, entry.name)).mtimeMs),
    0,
  );
}

/** Bundle the dashboard's page when `dist/dashboard/assets` is missing or older than `web/` (as `npm run build` does). */
export function ensureDashboardBuilt(): void {
  if (existsSync(ASSET) && statSync(ASSET).mtimeMs >= newest(join(ROOT, 'web'))) return;
  const run = spawnSync(process.execPath, [join(ROOT, 'scripts/build-dashboard.mjs')], { cwd: ROOT, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`dashboard build failed:\n${run.stderr}`);
}

/**
 * Launch headless Chromium with the flags that keep it off the network (platform notes). Throws — the test fails,
 * it is never skipped — when the browser is not installed.
 */
export async function launchChromium(executablePath = CHROMIUM): Promise<Browser> {
  if (!existsSync(executablePath)) {
    throw new Error(
      `Chromium not found at ${executablePath}: install it with \`apt-get install -y chromium\` (.ci/run does this), or point MCP_TASKS_CHROMIUM at a Chromium binary`,
    );
  }
  return chromium.launch({
    executablePath,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-dev-shm-usage'],
  });
}

/** axe-core's serious and critical violations on `page` (empty = none), with the elements they concern. */
export async function axeSerious(page: Page): Promise<unknown[]> {
  // evaluate() runs outside the page's CSP (which rightly refuses an injected inline script).
  await page.evaluate(readFileSync(AXE, 'utf8'));
  const violations = (await page.evaluate(
    async () => (await (globalThis as unknown as { axe: { run(): Promise<{ violations: unknown[] }> } }).axe.run()).violations,
  )) as Array<{ id: string; impact: string; nodes: Array<{ target: unknown }> }>;
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => ({ id: violation.id, impact: violation.impact, targets: violation.nodes.map((node) => node.target) }));
}
