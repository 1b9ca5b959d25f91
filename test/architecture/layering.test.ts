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
 * only; `ops` (metrics, probes) sees core ports and the service's hook seam, and is wired in by the CLI; `dashboard` (the web UI's server side) reaches tasks only through the service; `index.ts` is the public API and may re-export any library layer but never the CLI.
 */
const ALLOWED: Record<string, readonly string[]> = {
  protocol: ['protocol'],
  core: ['protocol', 'core'],
  store: ['protocol', 'core', 'store'],
  ledger: ['protocol', 'core', 'ledger'],
  execution: ['protocol', 'core', 'ledger', 'execution'],
  service: ['protocol', 'core', 'ledger', 'service'],
  auth: ['protocol', 'core', 'auth'],
  tools: ['protocol', 'core', 'tools'],
  ops: ['protocol', 'core', 'service', 'ops'],
  server: ['protocol', 'core', 'store', 'ledger', 'execution', 'service', 'auth', 'server'],
  dashboard: ['protocol', 'core', 'service', 'dashboard'],
  client: ['protocol', 'client'],
  testing: ['protocol', 'core', 'testing'],
  verify: ['protocol', 'client', 'verify'],
  cli: ['protocol', 'core', 'store', 'ledger', 'execution', 'service', 'auth', 'tools', 'server', 'ops', 'dashboard', 'client', 'verify', 'cli'],
  '(root)': ['protocol', 'core', 'store', 'ledger', 'execution', 'service', 'auth', 'tools', 'server', 'client', 'testing'],
};

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
  for (const match of source.matchAll(/(?:import|export)\s[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)|import\s+['"](\.{1,2}\/[^'"]+)['"]/g)) {
    found.add((match[1] ?? match[2] ?? match[3]) as string);
  }
  return [...found];
}

/** Relative specifiers of a file's static `import`/`export … from` statements only. */
function staticImports(source: string): string[] {
  return [...source.matchAll(/(?:import|export)\s[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|import\s+['"](\.{1,2}\/[^'"]+)['"]/g)].map((match) => (match[1] ?? match[2]) as string);
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
    for (const entry of entries) expect(closure(entry).filter((file) => file.startsWith(`server${sep}`)), entry).toEqual([]);
    // Negative controls: the same walk from `serve` finds the server, and the dynamic import of main.ts is seen.
    expect(closure('cli/serve.ts').some((file) => file.startsWith(`server${sep}`))).toBe(true);
    expect(relativeImports(readFileSync(resolve(SRC, 'cli/main.ts'), 'utf8'))).toContain('./serve.js');
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
});
