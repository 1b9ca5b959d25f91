#!/usr/bin/env node
// `.ci/run`, after `npm ci`: keep the better-sqlite3 addon that npm ci compiled where prebuild-install looks for a
// download it made before, so the next `npm ci` on this machine (a clean clone too) unpacks it instead of compiling
// SQLite again.
//
// better-sqlite3 installs with `prebuild-install || node-gyp rebuild --release`. prebuild-install first looks in the
// npm cache (<cache>/_prebuilds/<hash of the release URL>-<file name>), then downloads the release binary from GitHub,
// which this network refuses; node-gyp then compiles SQLite's amalgamation: about a minute on one core (60 s of the
// 93 s of an unloaded npm ci; 39 s with the kept addon). The file's name carries the package version, the
// Node ABI, the platform and the architecture, so another version or Node line finds nothing and compiles once. On a
// hit prebuild-install unpacks the file and requires the addon, as it does with a download; one that does not load
// fails it, and npm ci compiles as before. The addon is kept only when it loads here.
//
// Prints what it did; exits 0 unless it was asked to keep an addon and could not.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const packageDir = join(root, 'node_modules', 'better-sqlite3');
const require = createRequire(join(root, 'node_modules', 'prebuild-install', 'package.json'));

function say(message) {
  process.stdout.write(`keep-sqlite-addon: ${message}\n`);
}

// prebuild-install's own reading of the settings and its own names for the URL and the cached file (bin.js does the
// same), so the file is found exactly where it looks. process.argv holds no flags here.
const pkg = require(join(packageDir, 'package.json'));
const opts = { ...require('./rc')(pkg), pkg };
const util = require('./util');
const cached = util.cachedPrebuild(util.getDownloadUrl(opts));
if (existsSync(cached)) {
  say(`better-sqlite3 ${pkg.version} for Node ABI ${process.versions.modules} is kept as ${cached} already`);
  process.exit(0);
}

const addon = join('build', 'Release', 'better_sqlite3.node');
const loaded = spawnSync(process.execPath, ['-e', `if (typeof require(${JSON.stringify(join(packageDir, addon))}).Database !== 'function') process.exit(3)`]);
if (loaded.status !== 0) {
  say(`no loadable ${addon} in node_modules/better-sqlite3: nothing kept`);
  process.exit(1);
}
mkdirSync(dirname(cached), { recursive: true });
const partial = `${cached}.${process.pid}.tmp`;
const packed = spawnSync('tar', ['-czf', partial, '-C', packageDir, addon], { encoding: 'utf8' });
if (packed.status !== 0) {
  rmSync(partial, { force: true });
  say(`tar failed: ${packed.stderr.trim()}`);
  process.exit(1);
}
renameSync(partial, cached);
say(`kept the compiled better-sqlite3 ${pkg.version} (Node ABI ${process.versions.modules}) as ${cached}`);
