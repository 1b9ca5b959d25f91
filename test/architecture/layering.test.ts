import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

import { describe, expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../../src');

/**
 * Allowed import edges between top-level folders of `src/`:
 * `protocol ← core ← {store, execution, service, auth, tools} ← server ← cli` and `protocol ← client ← cli`.
 * `ledger` (idempotency digests, domain operations, reconciliation, audit; issue 12) sits behind the service and
 * the worker: it sees core only, and the service and execution may use it.
 * `service` (the task service, the one door of every entry path) sees core ports only, never a store
 * implementation; `execution` (executors, the worker, the sweeper) never sees the service or the server, so a
 * worker process carries no MCP server code. `testing` (the `mcp-tasks/testing` entry) sees core only; `verify`
 * (the contract and fault suite, with the fault proxy) drives servers from outside, so it sees protocol and client
 * only; `upstream` (issue 28: upstream MCP servers as a tool source, their connections and the executor that
 * forwards their calls) sits beside the executors: it sees core and execution, never the service or the server, so
 * a worker process can own the connections; `ops` (metrics, probes) sees core ports and the service's hook seam, and is wired in by the CLI; `dashboard` (the web UI's server side) reaches tasks only through the service; `index.ts` is the public API and may re-export any library layer but never the CLI.
 */
const ALLOWED: Record<string, readonly string[]> = {
  protocol: ['protocol'],
  core: ['protocol', 'core'],
  store: ['protocol', 'core', 'store'],
  ledger: ['protocol', 'core', 'ledger'],
  execution: ['protocol', 'core', 'ledger', 'execution'],
  upstream: ['protocol', 'core', 'execution', 'upstream'],
  service: ['protocol', 'core', 'ledger', 'service'],
  auth: ['protocol', 'core', 'auth'],
  tools: ['protocol', 'core', 'tools'],
  ops: ['protocol', 'core', 'service', 'ops'],
  server: ['protocol', 'core', 'store', 'ledger', 'execution', 'service', 'auth', 'server'],
  dashboard: ['protocol', 'core', 'service', 'dashboard'],
  client: ['protocol', 'client'],
  testing: ['protocol', 'core', 'testing'],
  verify: ['protocol', 'client', 'verify'],
  cli: ['protocol', 'core', 'store', 'ledger', 'execution', 'upstream', 'service', 'auth', 'tools', 'server', 'ops', 'dashboard', 'client', 'verify', 'cli'],
  // The package entries (index.ts re-exports tool.ts, the tool author's entry).
  '(root)': ['protocol', 'core', 'store', 'ledger', 'execution', 'service', 'auth', 'tools', 'server', 'client', 'testing', '(root)'],
};

/** The ports of the store by role (`core/ports/`); `core/store.ts` composes them into `TaskStore`. */
const PORT_FILES = [
  'admission.ts',
  'feed.ts',
  'inputs.ts',
  'leases.ts',
  'ledger.ts',
  'maintenance.ts',
  'processes.ts',
  'results.ts',
  'rollout.ts',
  'rows.ts',
  'sessions.ts',
  'steps.ts',
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') || path.endsWith('.cts') ? [path] : [];
  });
}

function layerOf(file: string): string {
  const parts = relative(SRC, file).split(sep);
  return parts.length === 1 ? '(root)' : (parts[0] as string);
}

/** Relative import specifiers of a file (static `import`/`export … from` and dynamic `import()`). */
export function relativeImports(source: string): string[] {
  const found = new Set<string>();
  for (const match of source.matchAll(
    /(?:import|export)\s[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)|import\s+['"](\.{1,2}\/[^'"]+)['"]/g,
  )) {
    found.add((match[1] ?? match[2] ?? match[3]) as string);
  }
  return [...found];
}

/** Relative specifiers of a file's static `import`/`export … from` statements only. */
function staticImports(source: string): string[] {
  return [...source.matchAll(/(?:import|export)\s[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|import\s+['"](\.{1,2}\/[^'"]+)['"]/g)].map(
    (match) => (match[1] ?? match[2]) as string,
  );
}

describe('architecture', () => {
  const files = sourceFiles(SRC);

  it('every source file lives in a known layer', () => {
    expect(files.length).toBeGreaterThan(20);
    for (const file of files) expect(Object.keys(ALLOWED), relative(SRC, file)).toContain(layerOf(file));
  });

  it('imports only point down the layering protocol ← core ← {store, execution, service, auth, tools} ← server ← cli, protocol ← client ← cli', () => {
    const violations: string[] = [];
    for (const file of files) {
      const from = layerOf(file);
      for (const specifier of relativeImports(readFileSync(file, 'utf8'))) {
        const target = resolve(dirname(file), specifier);
        if (!target.startsWith(SRC)) {
          violations.push(`${relative(SRC, file)} imports outside src: ${specifier}`);
          continue;
        }
        const to = layerOf(target.replace(/\.js$/, '.ts'));
        if (!ALLOWED[from]?.includes(to)) violations.push(`${relative(SRC, file)} (${from}) → ${specifier} (${to})`);
      }
    }
    expect(violations).toEqual([]);
  });

  /**
   * Every source file `entry` loads when it starts, following relative static imports (a dynamic `import()` loads
   * a module only when that code path runs, which is how main.ts keeps each command's modules apart).
   */
  function closure(entry: string): string[] {
    const seen = new Set<string>();
    const pending = [resolve(SRC, entry)];
    while (pending.length > 0) {
      const file = pending.pop() as string;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const specifier of staticImports(readFileSync(file, 'utf8'))) pending.push(resolve(dirname(file), specifier).replace(/\.js$/, '.ts'));
    }
    return [...seen].map((file) => relative(SRC, file));
  }

  it('a worker process loads no server code: nothing under execution/, nor the CLI entry or the worker command, reaches server/', () => {
    // main.ts loads each command's module only when that command runs.
    const entries = ['cli/main.ts', 'cli/worker.ts', ...files.filter((file) => layerOf(file) === 'execution').map((file) => relative(SRC, file))];
    for (const entry of entries)
      expect(
        closure(entry).filter((file) => file.startsWith(`server${sep}`)),
        entry,
      ).toEqual([]);
    // Negative controls: the same walk from `serve` finds the server, and the dynamic import of main.ts is seen.
    expect(closure('cli/serve.ts').some((file) => file.startsWith(`server${sep}`))).toBe(true);
    expect(relativeImports(readFileSync(resolve(SRC, 'cli/main.ts'), 'utf8'))).toContain('./serve.js');
  });

  it('a tool thread loads no MCP SDK: the static closure of execution/isolated-thread.ts imports no @modelcontextprotocol package', () => {
    // Each thread of the isolated executor loads this closure; the SDK's ~100 modules cost ~0.3 s of CPU per thread,
    // paid again for every thread a burst of runs starts (issue 25). Tools that use the SDK still load it themselves.
    const sdkImports = (entry: string) =>
      closure(entry).flatMap((file) =>
        [...readFileSync(resolve(SRC, file), 'utf8').matchAll(/^import\s[^'"]*?from\s*['"](@modelcontextprotocol\/[^'"]+)['"]/gm)]
          .filter((match) => !/^import\s+type\s/.test(match[0]))
          .map((match) => `${file} → ${match[1]}`),
      );
    expect(sdkImports('execution/isolated-thread.ts')).toEqual([]);
    // The tool author's entry (`mcp-tasks/tool`), which every thread loads with the tool modules that import it.
    expect(sdkImports('tool.ts')).toEqual([]);
    // Negative control: the same walk from the server finds the SDK.
    expect(sdkImports('server/create-tasks-server.ts').length).toBeGreaterThan(0);
  });

  /**
   * Inside `service/` (issue 24 §2), one folder per audience: `tasks/` (the tasks/* door), `calls/` (tools/call:
   * plan, create, inline run, MRTR rounds, fallback tools) and `viewer/` (dashboard and admin API). The files at the
   * root are what all three share (access checks on a principal, paging, the hooked door, reads, per-owner policies)
   * and import no audience folder, except `services.ts`, which builds the three. `calls/` may hand a fallback tool's
   * task operation to `tasks/`, and `viewer/` its cancel and answer; `tasks/` imports neither.
   */
  const SERVICE_ALLOWED: Record<string, readonly string[]> = {
    '(shared)': ['(shared)'],
    tasks: ['(shared)', 'tasks'],
    calls: ['(shared)', 'tasks', 'calls'],
    viewer: ['(shared)', 'tasks', 'viewer'],
    'services.ts': ['(shared)', 'tasks', 'calls', 'viewer'],
  };
  const SERVICE = join(SRC, 'service');

  function serviceAreaOf(file: string): string {
    const parts = relative(SERVICE, file).split(sep);
    if (parts.length === 1) return parts[0] === 'services.ts' ? 'services.ts' : '(shared)';
    return parts[0] as string;
  }

  it('service/: one folder per audience (tasks, calls, viewer) over shared rules, no audience folder imports another but as allowed', () => {
    const serviceFiles = files.filter((file) => layerOf(file) === 'service');
    expect(serviceFiles.some((file) => serviceAreaOf(file) === 'tasks')).toBe(true);
    const violations: string[] = [];
    for (const file of serviceFiles) {
      const from = serviceAreaOf(file);
      expect(Object.keys(SERVICE_ALLOWED), relative(SRC, file)).toContain(from);
      for (const specifier of relativeImports(readFileSync(file, 'utf8'))) {
        const target = resolve(dirname(file), specifier).replace(/\.js$/, '.ts');
        if (layerOf(target) !== 'service') continue;
        const to = serviceAreaOf(target);
        if (!SERVICE_ALLOWED[from]?.includes(to)) violations.push(`${relative(SRC, file)} (${from}) → ${specifier} (${to})`);
      }
    }
    expect(violations).toEqual([]);
    // Negative control: the shared rules never reach into an audience, and the tasks door never into tools/call.
    expect(SERVICE_ALLOWED['(shared)']).not.toContain('calls');
    expect(SERVICE_ALLOWED.tasks).not.toContain('calls');
    expect(serviceAreaOf(join(SERVICE, 'calls', 'x.ts'))).toBe('calls');
    expect(serviceAreaOf(join(SERVICE, 'access.ts'))).toBe('(shared)');
  });

  it('no service file is over ~400 lines (issue 24 §2: one audience and concern per class)', () => {
    const long = files.filter((file) => layerOf(file) === 'service' && readFileSync(file, 'utf8').split('\n').length > 420).map((file) => relative(SRC, file));
    expect(long).toEqual([]);
  });

  it('rollout controls (kill switch, canary, shadow settings) live in ops/rollout/', () => {
    const rollout = files
      .filter((file) => /kill-switch|canary|shadow|rollout/.test(relative(SRC, file)))
      .map((file) => relative(SRC, file).split(sep).join('/'));
    // Where the rest stay, and why: the store port's types and the store's codec (core/, store/: the store side of
    // issue 24 §3), the worker's shadow watch (execution/ may not import ops/), the CLI's shadow commands (they read
    // the CLI's config), and the kill switch's audit entry (written through ledger/, which ops/ may not import).
    const elsewhere = [
      'core/kill-switch.ts',
      'store/kill-switch-codec.ts',
      'execution/shadow-watch.ts',
      'cli/shadow-report.ts',
      'cli/shadow-settings.ts',
      'service/kill-switch-audit.ts',
    ];
    expect(
      rollout.filter(
        (file) =>
          !file.startsWith('ops/rollout/') &&
          !elsewhere.includes(file) &&
          !file.startsWith('core/ports/') &&
          !file.startsWith('store/') &&
          !file.startsWith('testing/'),
      ),
    ).toEqual([]);
    expect(rollout.some((file) => file.startsWith('ops/rollout/'))).toBe(true);
  });

  it('the checker sees a backwards edge (negative control)', () => {
    const imports = relativeImports(`import { x } from '../server/factory.js';\nexport { y } from "./z.js";\nconst m = await import('../cli/main.js');`);
    expect(imports).toEqual(['../server/factory.js', './z.js', '../cli/main.js']);
    expect(ALLOWED.core).not.toContain('server');
    expect(ALLOWED.client).not.toContain('core');
    expect(ALLOWED.service).not.toContain('store');
    expect(ALLOWED.execution).not.toContain('service');
    expect(ALLOWED.execution).not.toContain('server');
  });

  it('core/ports: the store ports by role import only core model files, never the composition or a backend', () => {
    const ports = files.filter((file) => relative(SRC, file).startsWith(`core${sep}ports${sep}`));
    expect(ports.map((file) => relative(join(SRC, 'core', 'ports'), file)).sort()).toEqual(PORT_FILES);
    const violations: string[] = [];
    for (const file of ports) {
      for (const specifier of relativeImports(readFileSync(file, 'utf8'))) {
        const target = relative(SRC, resolve(dirname(file), specifier));
        if (!target.startsWith(`core${sep}`) || target === join('core', 'store.js')) violations.push(`${relative(SRC, file)} → ${specifier}`);
      }
    }
    expect(violations).toEqual([]);
    // Negative control: the composition imports every port, so the walk above would see a port importing it.
    const composition = relativeImports(readFileSync(resolve(SRC, 'core/store.ts'), 'utf8'));
    for (const port of PORT_FILES) expect(composition).toContain(`./ports/${port.replace(/\.ts$/, '.js')}`);
  });

  it("each backend implements every port in a file of the port's name, and the contract suite is split the same way", () => {
    const namesIn = (folder: string) => new Set(files.filter((file) => dirname(file) === join(SRC, folder)).map((file) => relative(join(SRC, folder), file)));
    const missing = (folder: string) => PORT_FILES.filter((port) => !namesIn(folder).has(port));
    expect(missing('store/sqlite')).toEqual([]);
    expect(missing('store/postgres')).toEqual([]);
    expect(missing('testing/store-contract')).toEqual([]);
    // Negative control: a folder without the port files is reported, port by port.
    expect(missing('protocol')).toEqual(PORT_FILES);
  });
});
