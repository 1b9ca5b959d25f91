// Bundles the dashboard's page (web/dashboard, TypeScript, no framework) with esbuild into dist/dashboard/assets:
// one ES module and one stylesheet that the server reads from disk, so `npm start -- --dashboard` needs no network.
import { copyFileSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';

import { build } from 'esbuild';

const root = resolve(import.meta.dirname, '..');
const out = resolve(root, 'dist/dashboard/assets');
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [resolve(root, 'web/dashboard/app.ts')],
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: true,
  outfile: resolve(out, 'app.js'),
  logLevel: 'warning',
});
copyFileSync(resolve(root, 'web/dashboard/app.css'), resolve(out, 'app.css'));
