// Throughput and memory of a full analyze_logs scan on the demo corpus, against the same run's baseline of reading
// and splitting the same files without analysis (issue 17).
//
// Usage: npm run bench:logs [-- --lines 2000000[,20000000]] [--files 40] [--runs 3] [--corpora plain,gzip]
//                            [--dist DIR] [--compare DIR]
//
// For every size it writes two demo corpora into a temp directory (`mcp-tasks demo-corpus`, seed 1): one all plain,
// one all gzip. Each measurement runs in its own child process (so that peak RSS is that run's alone):
//   read — the files analyze_logs selects, walked and opened through the same confinement and split into lines by the
//          same reader (`forEachLine`, gunzip for .gz), with a handler that does nothing: the I/O cost;
//   scan — `scanLogs`, the whole analysis of the analyze_logs tool (redaction, header detection, year inference,
//          mining, severity, counts, resume journal in memory), without the MCP server around it.
// A run is timed from the first file opened until the scan's promise resolves (the report built), and its lines are
// the lines the reader returned (counted by the run, never taken from the corpus size). Figures are the fastest of
// --runs runs; the slowest is printed too. "× read" is scan time / read time (the analysis cost on top of I/O).
// CPU time (user + system of the child, least of the runs) is printed beside wall time: on a shared machine it is
// the steadier figure, as other processes' load lengthens wall time but not the CPU a run uses.
// --compare DIR measures another build (e.g. one made from an older commit) in the same run, interleaved.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const here = path.dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({
  options: {
    lines: { type: 'string', default: '2000000' },
    files: { type: 'string', default: '40' },
    runs: { type: 'string', default: '3' },
    corpora: { type: 'string', default: 'plain,gzip' },
    dist: { type: 'string', default: path.join(here, '..', 'dist') },
    compare: { type: 'string' },
    child: { type: 'string' },
    dir: { type: 'string' },
  },
});

if (values.child) {
  await child(values.child, path.resolve(values.dist), values.dir);
} else {
  await main();
}

/** One measurement; prints a JSON line `{lines, ms, cpuMs, rssMB, files, templates}`. */
async function child(kind, dist, dir) {
  const load = (m) => import(pathToFileURL(path.join(dist, m)).href);
  const [{ resolveConfined }, { walkFiles }, { logFileSelector, isGzip }, { forEachLine }, { scanLogs }] = await Promise.all([
    load('tools/roots.js'),
    load('tools/walk.js'),
    load('tools/analyze-logs/files.js'),
    load('tools/lines.js'),
    load('tools/analyze-logs/scan.js'),
  ]);
  const signal = new AbortController().signal;
  const { target, confinement } = await resolveConfined(dir, { roots: [dir], deniedPaths: [] });
  let lines = 0;
  let files = 0;
  let templates = 0;
  const start = performance.now();
  const cpuStart = process.cpuUsage();
  if (kind === 'read') {
    const walk = await walkFiles(target, { confinement, signal, maxFiles: 100_000 });
    const selected = logFileSelector(null);
    for (const file of walk.files.filter((f) => selected(f.relative))) {
      files++;
      lines += await forEachLine(await confinement.openForReading(file.path), () => {}, {
        signal,
        gzip: isGzip(file.relative),
        rejectBinary: true,
      });
    }
  } else {
    const journal = new Map();
    const report = await scanLogs({
      target,
      confinement,
      since: null,
      top: 10,
      include: null,
      redact: ['email', 'card'],
      signal,
      onProgress: (done) => {
        files = done;
      },
      step: async (name, fn) => {
        if (!journal.has(name)) journal.set(name, JSON.parse(JSON.stringify(await fn())));
        return journal.get(name);
      },
    });
    lines = report.lines;
    templates = report.templateCount;
  }
  const ms = performance.now() - start;
  const cpu = process.cpuUsage(cpuStart);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  process.stdout.write(`${JSON.stringify({ lines, ms, cpuMs, rssMB: process.resourceUsage().maxRSS / 1024, files, templates })}\n`);
}

function measure(kind, dist, dir) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [fileURLToPath(import.meta.url), '--child', kind, '--dist', dist, '--dir', dir], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    proc.stdout.on('data', (chunk) => {
      out += chunk;
    });
    proc.on('error', reject);
    proc.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`${kind} child exited ${code}`))));
  });
}

async function main() {
  const sizes = values.lines.split(',').map(Number);
  const files = Number(values.files);
  const runs = Number(values.runs);
  const builds = [['this build', path.resolve(values.dist)]];
  if (values.compare) builds.push(['--compare', path.resolve(values.compare)]);
  const work = mkdtempSync(path.join(tmpdir(), 'bench-logs-'));
  const cli = path.join(path.resolve(values.dist), 'cli', 'main.js');
  const rows = [];
  try {
    for (const lines of sizes) {
      for (const [label, gzipRatio] of [
        ['plain', '0'],
        ['gzip', '1'],
      ].filter(([name]) => values.corpora.split(',').includes(name))) {
        const dir = path.join(work, `${lines}-${label}`);
        process.stderr.write(`writing ${lines} lines (${label}) into ${dir}\n`);
        execFileSync(
          process.execPath,
          [cli, 'demo-corpus', '--out', dir, '--files', String(files), '--lines', String(Math.ceil(lines / files)), '--gzip-ratio', gzipRatio],
          { stdio: ['ignore', 'ignore', 'inherit'] },
        );
        const results = new Map();
        for (let run = 0; run < runs; run++) {
          // Interleaved, so that a burst of load on the machine hits every variant alike.
          for (const [name, dist] of [['read', builds[0][1]], ...builds.map(([b, d]) => [`scan ${b}`, d])]) {
            const r = await measure(name.startsWith('read') ? 'read' : 'scan', dist, dir);
            process.stderr.write(
              `  ${name} run ${run + 1}: ${r.lines} lines in ${r.ms.toFixed(0)} ms (CPU ${r.cpuMs.toFixed(0)} ms), peak RSS ${r.rssMB.toFixed(0)} MB\n`,
            );
            const list = results.get(name) ?? [];
            list.push(r);
            results.set(name, list);
          }
        }
        const best = (name) => results.get(name).reduce((a, b) => (b.ms < a.ms ? b : a));
        const slowest = (name) => Math.max(...results.get(name).map((r) => r.ms));
        const read = best('read');
        for (const name of results.keys()) {
          const r = best(name);
          if (r.lines !== read.lines) throw new Error(`${name} counted ${r.lines} lines, the reader ${read.lines}`);
          rows.push({
            corpus: `${lines} ${label}`,
            run: name,
            lines: r.lines,
            files: r.files,
            bestMs: r.ms,
            slowestMs: slowest(name),
            linesPerS: r.lines / (r.ms / 1000),
            ratio: r.ms / read.ms,
            cpuMs: Math.min(...results.get(name).map((x) => x.cpuMs)),
            cpuRatio: Math.min(...results.get(name).map((x) => x.cpuMs)) / Math.min(...results.get('read').map((x) => x.cpuMs)),
            rssMB: Math.max(...results.get(name).map((x) => x.rssMB)),
            templates: r.templates,
          });
        }
        rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const fmt = (n) => Math.round(n).toLocaleString('en-US');
  console.log(`\nanalyze_logs throughput (fastest of ${runs} runs; node ${process.version}; ${files} files per corpus)\n`);
  console.log('| corpus | run | lines | lines/s | time (slowest) | × read | CPU time | CPU × read | peak RSS | templates |');
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(
      `| ${r.corpus} | ${r.run} | ${fmt(r.lines)} | ${fmt(r.linesPerS)} | ${(r.bestMs / 1000).toFixed(2)} s (${(r.slowestMs / 1000).toFixed(2)} s) | ${r.ratio.toFixed(2)} | ${(r.cpuMs / 1000).toFixed(2)} s | ${r.cpuRatio.toFixed(2)} | ${fmt(r.rssMB)} MB | ${r.run.startsWith('read') ? '' : r.templates} |`,
    );
  }
}
