#!/usr/bin/env node
// Evidence for docs/adr/0002-tool-isolation.md: terminate worker threads at random moments while they load the
// isolated executor's ES thread module (dist/execution/isolated-thread.js and its imports), either the way piscina
// loads a task module — `require()`, which is `require(esm)` on Node ≥ 20.19 — or with `import()` of its file URL,
// as `isolated-entry.cjs` does. On Node 20.20 the `require` mode ends this process with
// `FATAL ERROR: v8::Module::IsGraphAsync must be used on an instantiated module` after a few hundred terminations;
// the `import` mode survives. Usage: node scripts/terminate-during-load.mjs require|import [terminations] [minMs] [maxMs]
// (build first; pick minMs..maxMs around this machine's load time of the module, printed as "after load").
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

const [mode = 'import', count = '300', lo = '100', hi = '700'] = process.argv.slice(2);
const target = fileURLToPath(new URL('../dist/execution/isolated-thread.js', import.meta.url));
const code =
  mode === 'require'
    ? `require(${JSON.stringify(target)}); require('node:worker_threads').parentPort.postMessage('loaded')`
    : `import(${JSON.stringify(pathToFileURL(target).href)}).then(() => require('node:worker_threads').parentPort.postMessage('loaded'))`;
let terminated = 0;
let afterLoad = 0;
async function round() {
  const worker = new Worker(code, { eval: true });
  let loaded = false;
  worker.on('message', () => (loaded = true));
  worker.on('error', () => {});
  await new Promise((resolve) => setTimeout(resolve, Number(lo) + Math.random() * (Number(hi) - Number(lo))));
  if (loaded) afterLoad += 1;
  await worker.terminate();
  terminated += 1;
}
for (let i = 0; i < Number(count); i += 2) await Promise.all([round(), round()]);
console.log(`${mode}: the process survived ${terminated} terminations (${afterLoad} of them after the module had loaded)`);
