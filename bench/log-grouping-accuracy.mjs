// Grouping accuracy of the analyze_logs template miner on the loghub 2k samples.
//
// Usage: npm run bench:grouping [-- LOGHUB_DIR]   (or: npm run build && node bench/log-grouping-accuracy.mjs [LOGHUB_DIR])
// LOGHUB_DIR defaults to ../shared/data/loghub next to the repository; the files are read in place, never copied.
// It holds one directory per system (Apache/Apache_2k.log and Apache/Apache_2k.log_structured.csv, …), as in
// https://github.com/logpai/loghub.
//
// Metric ("Grouping Accuracy", Zhu et al., ICSE-SEIP 2019): a line is correct when the set of lines in its
// predicted group equals the set of lines in its ground-truth event group. Two inputs are measured:
// - content: the message column of `<System>_2k.log_structured.csv` (the header-free message of each line of
//   `<System>_2k.log`), the input the published figures use (Drain averages about 0.865 there);
// - raw: the whole lines of `<System>_2k.log` after the generic header stripping analyze_logs applies, i.e. what
//   the tool sees in production with no per-system log format.
// The miner runs with its defaults and no per-system settings in both.
import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const dataDir = path.resolve(process.argv[2] ?? path.join(here, '..', '..', 'shared', 'data', 'loghub'));

/** Ends the run with a message instead of a stack trace: these are setup mistakes, not bugs. */
function fail(message) {
  console.error(message);
  process.exit(1);
}

const systems = await readdir(dataDir, { withFileTypes: true })
  .then((entries) => entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort())
  .catch((error) => {
    if (error.code !== 'ENOENT' && error.code !== 'ENOTDIR') throw error;
    return fail(
      `loghub data not found: ${dataDir} is not a directory.\n` +
        'Pass the directory that holds the loghub systems (Apache/Apache_2k.log, …): ' +
        'npm run bench:grouping -- /path/to/loghub',
    );
  });
if (systems.length === 0) fail(`no loghub systems under ${dataDir}`);
// Imported only now so that a missing build is reported as such, after the data check.
const { TemplateMiner, LineParser } = await Promise.all([
  import('../dist/tools/analyze-logs/miner.js'),
  import('../dist/tools/analyze-logs/line.js'),
])
  .then(([miner, line]) => ({ ...miner, ...line }))
  .catch((error) => fail(`cannot load dist/ (${error.message}): run npm run build first (npm run bench:grouping does).`));

/** Parses one CSV record (RFC 4180 quoting); loghub records never span lines. */
function parseCsvLine(line) {
  const fields = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      fields.push(field);
      field = '';
    } else field += c;
  }
  fields.push(field);
  return fields;
}

async function readLines(file) {
  const lines = [];
  const input = createReadStream(file);
  // Checked before reading so that an incomplete copy of loghub is reported by name rather than by a stack.
  await once(input, 'open').catch((error) =>
    fail(`cannot read ${file} (${error.code}): each system directory needs <System>_2k.log and <System>_2k.log_structured.csv`),
  );
  const reader = readline.createInterface({ input, crlfDelay: Infinity });
  for await (const line of reader) lines.push(line);
  return lines;
}

/** `{content[], eventIds[]}` from a structured CSV. */
async function readGroundTruth(file) {
  const [header, ...rows] = (await readLines(file)).filter((line) => line !== '');
  const columns = parseCsvLine(header);
  const contentAt = columns.indexOf('Content');
  const eventAt = columns.indexOf('EventId');
  const parsed = rows.map(parseCsvLine);
  return { content: parsed.map((r) => r[contentAt]), eventIds: parsed.map((r) => r[eventAt]) };
}

/** Fraction of lines whose predicted group has exactly the lines of their true group. */
function groupingAccuracy(predicted, truth) {
  const truthSize = new Map();
  for (const id of truth) truthSize.set(id, (truthSize.get(id) ?? 0) + 1);
  const members = new Map();
  predicted.forEach((group, line) => {
    const list = members.get(group) ?? [];
    list.push(line);
    members.set(group, list);
  });
  let correct = 0;
  for (const lines of members.values()) {
    const event = truth[lines[0]];
    if (lines.every((line) => truth[line] === event) && truthSize.get(event) === lines.length) correct += lines.length;
  }
  return correct / truth.length;
}

/**
 * Published grouping accuracy of Drain with per-system preprocessing and thresholds (logpai/logparser,
 * Loghub 2k benchmark), for comparison only.
 */
const DRAIN_REFERENCE = {
  Android: 0.911, Apache: 1, BGL: 0.9625, HDFS: 0.9975, HPC: 0.887, Hadoop: 0.9475, HealthApp: 0.78, Linux: 0.69,
  Mac: 0.7865, OpenSSH: 0.7875, OpenStack: 0.7325, Proxifier: 0.5265, Spark: 0.92, Thunderbird: 0.955,
  Windows: 0.997, Zookeeper: 0.9665,
};

function mine(messages) {
  const miner = new TemplateMiner();
  return messages.map((message) => miner.add(message).id);
}

const rows = [];
for (const system of systems) {
  const base = path.join(dataDir, system, `${system}_2k.log`);
  const truth = await readGroundTruth(`${base}_structured.csv`);
  const parser = new LineParser();
  const raw = (await readLines(base)).slice(0, truth.eventIds.length);
  if (raw.length !== truth.eventIds.length) throw new Error(`${system}: ${raw.length} lines vs ${truth.eventIds.length} labels`);
  rows.push({
    system,
    lines: raw.length,
    events: new Set(truth.eventIds).size,
    drain: DRAIN_REFERENCE[system] ?? Number.NaN,
    content: groupingAccuracy(mine(truth.content), truth.eventIds),
    raw: groupingAccuracy(mine(raw.map((line) => parser.parse(line).message)), truth.eventIds),
  });
}

const pad = (text, width) => String(text).padEnd(width);
const fmt = (value) => value.toFixed(4);
const line = (cells) => console.log(cells.map((cell, i) => pad(cell, [12, 6, 7, 8, 8, 8][i])).join(' ').trimEnd());
line(['system', 'lines', 'events', 'content', 'raw', 'Drain*']);
for (const row of rows) line([row.system, row.lines, row.events, fmt(row.content), fmt(row.raw), fmt(row.drain)]);
const mean = (key) => rows.reduce((sum, row) => sum + row[key], 0) / rows.length;
line(['average', '', '', fmt(mean('content')), fmt(mean('raw')), fmt(mean('drain'))]);
console.log('* Drain as published, tuned per system, on content; this miner uses one setting for all systems.');
