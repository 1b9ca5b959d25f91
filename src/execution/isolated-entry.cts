/**
 * The task module of the isolated executor's piscina pool, in CommonJS on purpose. piscina loads a task module
 * with `require()` first; for an ES module that is `require(esm)`, whose synchronous instantiation aborts the whole
 * process (a V8 fatal error, issue 22) when the thread is terminated meanwhile. This entry is loaded by that
 * `require()` as plain CommonJS and loads the ES thread module the way Node recommends, with `import()` of its file
 * URL. Its export is a promise of the run handler, which piscina awaits (as the `default` of the module it
 * required) before the thread reports ready, so the tools are loaded (see `warmThread`) before any run reaches it.
 */
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS by design (see above): require is its module system */
import path = require('node:path');
import url = require('node:url');
import type { warmThread } from './isolated-thread.js' with { 'resolution-mode': 'import' };

const startedAt = performance.now();
const handler = import(url.pathToFileURL(path.join(__dirname, 'isolated-thread.js')).href).then((thread: { warmThread: typeof warmThread }) => thread.warmThread(startedAt));

export = handler;
