#!/usr/bin/env node
// `npm test` after vitest: run the given npm scripts at once and print each one's output whole, in the given order.
//
//   node scripts/run-together.mjs SCRIPT ...
//
// The official conformance scenarios (about 14 s, mostly one server waiting on one client after another) and the
// Node LTS lane (about a minute) need nothing from each other, and neither keeps two cores busy: run one after the
// other, the conformance run added its whole time to `npm test`. The first script's output streams as it comes;
// each later one's is held until every script before it has ended, then printed and streamed from there, so the
// log reads as if they had run in turn. Exits with the first failing script's status, after every script ended.
import { spawn } from 'node:child_process';

const scripts = process.argv.slice(2);
if (scripts.length === 0) {
  process.stderr.write('usage: node scripts/run-together.mjs SCRIPT ...\n');
  process.exit(64);
}

/** The command that runs npm (the one running this script when started by `npm run`). */
const npm = process.env.npm_execpath?.endsWith('.js') ? [process.execPath, process.env.npm_execpath] : ['npm'];

let turn = 0;
const runs = scripts.map((script, index) => {
  /** Output not printed yet: [stream, chunk] in the order it came. */
  const held = [];
  const pass = (stream) => (chunk) => (index === turn ? stream.write(chunk) : held.push([stream, chunk]));
  const child = spawn(npm[0], [...npm.slice(1), 'run', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.on('data', pass(process.stdout));
  child.stderr.on('data', pass(process.stderr));
  const ended = new Promise((resolveEnd) => child.on('close', (code, signal) => resolveEnd(code ?? (signal ? 128 : 1))));
  return { held, ended };
});

let status = 0;
for (const [index, run] of runs.entries()) {
  turn = index;
  for (const [stream, chunk] of run.held.splice(0)) stream.write(chunk);
  const code = await run.ended;
  if (code !== 0 && status === 0) status = code;
}
process.exit(status);
