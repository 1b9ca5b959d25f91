// Summaries of the V8 CPU profiles `--profile` makes our server write (`--cpu-prof`): where the server's own time
// goes, by function (self time) and by code owner (our dist/, each package in node_modules, Node internals).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Who owns a script URL: `mcp-tasks`, a package name, `node:internal`, or `(native)` for V8/GC/idle. */
function ownerOf(url) {
  if (!url) return '(native)';
  if (url.startsWith('node:')) return 'node:internal';
  const packaged = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (packaged) return packaged[1];
  if (url.includes('/dist/')) return 'mcp-tasks';
  if (url.includes('/bench/')) return 'bench';
  return url;
}

function shortUrl(url) {
  const packaged = /node_modules\/(.*)$/.exec(url);
  if (packaged) return packaged[1];
  const ours = /\/(dist\/.*|bench\/.*)$/.exec(url);
  return ours ? ours[1] : url;
}

function frameName({ functionName, url, lineNumber }) {
  return `${functionName || '(anonymous)'} ${url ? `${shortUrl(url)}:${lineNumber + 1}` : ''}`.trim();
}

/**
 * One `.cpuprofile`: top functions by self time, by total time (self plus callees, each function counted once per
 * stack) and self time per code owner. `(idle)` is left out of every share.
 */
export function summariseProfile(path, top = 15) {
  const profile = JSON.parse(readFileSync(path, 'utf8'));
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const selfUs = new Map();
  profile.samples.forEach((id, index) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0)));
  const byFunction = new Map();
  const total = new Map();
  const byOwner = new Map();
  let busy = 0;
  for (const [id, us] of selfUs) {
    const frame = nodes.get(id).callFrame;
    if (frame.functionName === '(idle)') continue;
    busy += us;
    const name = frameName(frame);
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
    const owner = ownerOf(frame.url);
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + us);
    const onStack = new Set();
    for (let at = id; at !== undefined; at = parents.get(at)) onStack.add(frameName(nodes.get(at).callFrame));
    for (const caller of onStack) total.set(caller, (total.get(caller) ?? 0) + us);
  }
  for (const root of ['(root)', '(program)']) total.delete(root);
  const share = (entries) =>
    [...entries]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: us / 1000, share: us / busy }));
  return { busyMs: busy / 1000, functions: share(byFunction), inclusive: share(total), owners: share(byOwner) };
}

/** Summaries of every profile in `dir`, keyed by file name without `.cpuprofile`. */
export function summariseProfiles(dir) {
  const summaries = {};
  for (const file of readdirSync(dir)
    .filter((name) => name.endsWith('.cpuprofile'))
    .sort()) {
    summaries[file.replace(/\.cpuprofile$/, '')] = summariseProfile(join(dir, file));
  }
  return summaries;
}

/** The markdown section listing each profile's owners and hottest functions. */
export function profilesMarkdown(summaries) {
  const lines = ['', '## CPU profiles of our server (idle excluded)', ''];
  for (const [name, summary] of Object.entries(summaries)) {
    lines.push(`### ${name} (${summary.busyMs.toFixed(0)} ms busy)`, '');
    lines.push(`By owner: ${summary.owners.map((owner) => `${owner.name} ${(owner.share * 100).toFixed(1)} %`).join(', ')}`, '');
    for (const [title, list] of [
      ['Self time', summary.functions],
      ['Total time (with callees)', summary.inclusive],
    ]) {
      lines.push(`| ${title}: function | ms | Share |`, '|---|---:|---:|');
      for (const fn of list) lines.push(`| \`${fn.name.replaceAll('|', '/')}\` | ${fn.ms.toFixed(1)} | ${(fn.share * 100).toFixed(1)} % |`);
      lines.push('');
    }
  }
  return lines.join('\n');
}
