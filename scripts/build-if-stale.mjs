#!/usr/bin/env node
// `npm test`'s pretest: `npm run build` unless dist/ is newer than everything the build reads. On CI the build
// that `npm ci` has just run in `prepare` is then not repeated; after an edit of src/ or web/ it runs as before.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
/** What the build writes last of each of its two steps (tsc, then the dashboard bundle). */
const OUTPUTS = ['dist/cli/main.js', 'dist/dashboard/assets/app.js'];
/** What the build reads (directories count with their own mtime, so a deleted file counts too). */
const INPUTS = ['src', 'web', 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json', 'scripts/build-dashboard.mjs'];

/** Newest mtime under `path` (0 when it does not exist). */
function newest(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(path).reduce((latest, entry) => Math.max(latest, newest(join(path, entry))), stat.mtimeMs);
}

const built = Math.min(...OUTPUTS.map((output) => statSync(join(root, output), { throwIfNoEntry: false })?.mtimeMs ?? 0));
const changed = Math.max(...INPUTS.map((input) => newest(join(root, input))));
if (built > changed) {
  process.stdout.write('dist/ is newer than src/, web/ and the build settings: no build (npm run build forces one)\n');
} else {
  const result = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  process.exit(result.status ?? 1);
}
