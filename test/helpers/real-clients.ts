/**
 * Real third-party MCP clients, run as their users run them (never hand-written stand-ins):
 * - `@apify/mcpc` (root devDependency) — a CLI for 2025-11-25 tasks, with a background bridge per session;
 * - the MCP Inspector's CLI, `@modelcontextprotocol/inspector` 2.12.0, installed into `tools/inspector` by
 *   `npm ci --prefix tools/inspector` on first use (npm registry only; nothing else is downloaded) and run with the
 *   project's Node 20 (it declares 22.19, but its CLI runs on 20).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
const INSPECTOR_DIR = join(ROOT, 'tools', 'inspector');
const INSPECTOR_PACKAGE = join(INSPECTOR_DIR, 'node_modules', '@modelcontextprotocol', 'inspector', 'package.json');
const MCPC = join(ROOT, 'node_modules', '@apify', 'mcpc', 'package.json');

/** The outcome of one client run. */
export interface ClientRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<ClientRun> {
  return new Promise((resolveRun) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolveRun({ code, stdout, stderr });
    });
  });
}

/** A private HOME for a client (its config, sessions and logs), removed by `dispose`. */
export function clientHome(prefix: string): { env: NodeJS.ProcessEnv; dispose(): void } {
  const home = mkdtempSync(join(tmpdir(), prefix));
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), NO_UPDATE_NOTIFIER: '1', CI: 'true' };
  delete env.MCP_CATALOG_PATH;
  return { env, dispose: () => rmSync(home, { recursive: true, force: true }) };
}

/**
 * The Inspector's launcher, installed on first use.
 * @throws Error saying how to install it when `npm ci --prefix tools/inspector` fails.
 */
export function inspectorBin(): string {
  const pinned = (JSON.parse(readFileSync(join(INSPECTOR_DIR, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies[
    '@modelcontextprotocol/inspector'
  ];
  const installed = existsSync(INSPECTOR_PACKAGE) ? (JSON.parse(readFileSync(INSPECTOR_PACKAGE, 'utf8')) as { version: string }).version : undefined;
  if (installed !== pinned) {
    const result = spawnSync('npm', ['ci', '--prefix', INSPECTOR_DIR, '--no-audit', '--no-fund'], { stdio: 'ignore', timeout: 300_000 });
    if (result.status !== 0)
      throw new Error(
        `the MCP Inspector is not installed and 'npm ci --prefix tools/inspector' failed (exit ${result.status}); run it by hand (it needs the npm registry)`,
      );
  }
  return join(INSPECTOR_DIR, 'node_modules', '@modelcontextprotocol', 'inspector', 'clients', 'launcher', 'build', 'index.js');
}

/** `mcp-inspector --cli …` with the project's Node. */
export function inspectorCli(args: string[], env: NodeJS.ProcessEnv): Promise<ClientRun> {
  return run(process.execPath, [inspectorBin(), '--cli', ...args], env);
}

/** `mcpc …` (the root devDependency). */
export function mcpc(args: string[], env: NodeJS.ProcessEnv): Promise<ClientRun> {
  if (!existsSync(MCPC)) throw new Error('@apify/mcpc is missing: run npm ci');
  return run(process.execPath, [join(ROOT, 'node_modules', '@apify', 'mcpc', 'bin', 'mcpc'), ...args], env);
}

/**
 * `mcpdo …`, the Inspector's connection CLI: one named connection per server, held by a background daemon. The
 * environment must come from {@link mcpdoPrivateEnv}, so the test's daemon is its own (`mcpdo daemon stop` ends it).
 */
export function mcpdo(args: string[], env: NodeJS.ProcessEnv): Promise<ClientRun> {
  return run(process.execPath, [join(dirname(inspectorBin()), '..', '..', 'mcpdo', 'build', 'mcp-bin.js'), ...args], env);
}

/** `env` plus the variables of `mcpdo private`: an isolated, token-gated daemon for this test. */
export async function mcpdoPrivateEnv(env: NodeJS.ProcessEnv): Promise<NodeJS.ProcessEnv> {
  const printed = await mcpdo(['private'], env);
  const exports = Object.fromEntries([...printed.stdout.matchAll(/^export (\w+)='([^']*)'$/gm)].map((match) => [match[1], match[2]]));
  if (!exports.MCP_INSPECTOR_DAEMON_DIR) throw new Error(`mcpdo private printed no daemon directory: ${printed.stdout}${printed.stderr}`);
  return { ...env, ...exports };
}
