/**
 * A vitest reporter that ends every run with its ten slowest test files (wall time of each file: import plus its
 * tests and hooks), so that a file that grows slow is seen in the run that made it so. `vitest.config.ts` adds it
 * beside the default reporter; with CI_SLOWEST_FILES set it also writes the table to that file, which `.ci/run`
 * prints again above its verdict.
 */
import { writeFileSync } from 'node:fs';

import type { Reporter, TestModule } from 'vitest/node';

/** How many files the table lists. */
const LISTED = 10;

/** One row of the table: seconds of import and of tests, and the number of tests. */
interface FileTime {
  file: string;
  project: string;
  importSeconds: number;
  testSeconds: number;
  tests: number;
}

function timeOf(module: TestModule, root: string): FileTime {
  const diagnostic = module.diagnostic();
  const file = module.moduleId.startsWith(`${root}/`) ? module.moduleId.slice(root.length + 1) : module.moduleId;
  return {
    file,
    project: module.project.name,
    importSeconds: diagnostic.collectDuration / 1000,
    testSeconds: diagnostic.duration / 1000,
    tests: [...module.children.allTests()].length,
  };
}

/** The rows of the `LISTED` slowest files, slowest first. */
export function slowestFiles(modules: ReadonlyArray<TestModule>, root: string, listed = LISTED): FileTime[] {
  return modules
    .map((module) => timeOf(module, root))
    .sort((a, b) => b.importSeconds + b.testSeconds - (a.importSeconds + a.testSeconds))
    .slice(0, listed);
}

export default class SlowestFilesReporter implements Reporter {
  #root = process.cwd();

  onInit(vitest: { config: { root: string } }): void {
    this.#root = vitest.config.root;
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    if (modules.length === 0) return;
    const rows = slowestFiles(modules, this.#root);
    const total = modules.reduce((sum, module) => sum + (module.diagnostic().collectDuration + module.diagnostic().duration) / 1000, 0);
    const lines = rows.map(
      (row) =>
        `${(row.importSeconds + row.testSeconds).toFixed(1).padStart(7)} s  ${row.importSeconds.toFixed(1).padStart(5)} s  ${String(row.tests).padStart(5)}  ${row.project.padEnd(8)}  ${row.file}`,
    );
    const table =
      `${rows.length} slowest of ${modules.length} test files (${total.toFixed(0)} s of file time in all):\n` +
      `  total   import  tests  project   file\n${lines.join('\n')}\n`;
    process.stdout.write(`\n${table}`);
    if (process.env.CI_SLOWEST_FILES) writeFileSync(process.env.CI_SLOWEST_FILES, table);
  }
}
