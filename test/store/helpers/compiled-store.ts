import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import ts from 'typescript';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/**
 * Worker threads run plain Node, outside vitest's transform, so they cannot import the TypeScript source.
 * Rather than depend on `dist/` (stale unless `npm run build` ran, and broken whenever any other folder of
 * the project does not type-check yet), this transpiles exactly the store entry and its relative imports
 * with `ts.transpileModule` (per file, no type check: the main tsc run does that) into a private folder
 * under `node_modules/.cache`, where bare imports such as `better-sqlite3` still resolve to the project's
 * node_modules. Each call gets its own folder, so test files running in parallel never share one.
 *
 * @returns the `file:` URL of the compiled `src/store/sqlite/index.js` and a function deleting the folder.
 */
export function compileSqliteStoreForWorkers(): { moduleUrl: string; remove(): void } {
  const outDir = join(REPO, 'node_modules', '.cache', 'mcp-tasks-test', `store-${process.pid}-${Date.now()}`);
  const entry = join(REPO, 'src', 'store', 'sqlite', 'index.ts');
  const pending = [entry];
  const done = new Set<string>();
  while (pending.length > 0) {
    const source = pending.pop()!;
    if (done.has(source)) continue;
    done.add(source);
    const { outputText } = ts.transpileModule(readFileSync(source, 'utf8'), {
      fileName: source,
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        verbatimModuleSyntax: true,
      },
    });
    const target = join(outDir, relative(REPO, source)).replace(/\.ts$/, '.js');
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, outputText);
    // Follow the relative imports that survived type erasure (`./x.js` is written for `./x.ts`).
    for (const match of outputText.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)\.js['"]/g)) {
      pending.push(resolve(dirname(source), `${match[1]}.ts`));
    }
  }
  // node_modules is not a package scope of the project: say explicitly that these files are ES modules.
  writeFileSync(join(outDir, 'package.json'), JSON.stringify({ type: 'module' }));
  return {
    moduleUrl: pathToFileURL(join(outDir, 'src', 'store', 'sqlite', 'index.js')).href,
    remove: () => rmSync(outDir, { recursive: true, force: true }),
  };
}
