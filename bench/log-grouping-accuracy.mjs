// Grouping and template accuracy of the analyze_logs template miner on the loghub 2k samples.
//
// Usage: npm run bench:grouping [-- LOGHUB_DIR] [--json]
//        (or: npm run build && node bench/log-grouping-accuracy.mjs [LOGHUB_DIR] [--json])
// LOGHUB_DIR defaults to ../shared/data/loghub next to the repository (see bench/lib/loghub.mjs; MCP_TASKS_LOGHUB
// overrides it); the files are read in place, never copied. It holds one directory per system
// (Apache/Apache_2k.log and Apache/Apache_2k.log_structured.csv, …), as in https://github.com/logpai/loghub.
//
// Metrics, per system and averaged over the train and the held-out systems apart (see TRAIN in lib/loghub.mjs):
// - GA, grouping accuracy (Zhu et al., ICSE-SEIP 2019): a line is correct when the set of lines in its predicted
//   group equals the set of lines in its ground-truth event;
// - PA, parsing accuracy: the line's template text equals its event's (whitespace and wildcard runs normalised);
// - FTA (Khan et al., ICSE 2022): F1 over templates, a template counting when its group and text are both right.
// Two inputs are measured:
// - content: the message column of `<System>_2k.log_structured.csv`, the input the published figures use;
// - raw: the whole lines of `<System>_2k.log`, parsed as analyze_logs parses a file: its header format detected
//   from its first lines, then each line split into header and message. No per-system setting anywhere.
import path from 'node:path';

import { groupingAccuracy, HELD_OUT, locateLoghub, LoghubDataError, missingDataHelp, readSystem, templateAccuracy, TRAIN } from './lib/loghub.mjs';

const args = process.argv.slice(2);
// Tuning experiments only (MINER_OPTIONS='{"similarity":0.6}'); the reported figures use the defaults.
const tuning = process.env.MINER_OPTIONS ? JSON.parse(process.env.MINER_OPTIONS) : {};
const json = args.includes('--json');
const explicit = args.find((arg) => !arg.startsWith('--'));

/** Ends the run with a message instead of a stack trace: these are setup mistakes, not bugs. */
function fail(message) {
  console.error(message);
  process.exit(1);
}

// The bench's own location decides the default, so a copy of the script in another clone looks next to that clone.
const located = locateLoghub(explicit, path.resolve(import.meta.dirname, '..'));
if (!located.dir) fail(missingDataHelp(located.missing));
const dataDir = located.dir;
// Imported only now so that a missing build is reported as such, after the data check.
const { TemplateMiner, FileLineParser } = await Promise.all([import('../dist/tools/analyze-logs/miner.js'), import('../dist/tools/analyze-logs/line.js')])
  .then(([miner, line]) => ({ ...miner, ...line }))
  .catch((error) => fail(`cannot load dist/ (${error.message}): run npm run build first (npm run bench:grouping does).`));

/**
 * Published grouping accuracy of Drain with per-system preprocessing and thresholds (logpai/logparser,
 * Loghub 2k benchmark), for comparison only.
 */
const DRAIN_REFERENCE = {
  Android: 0.911,
  Apache: 1,
  BGL: 0.9625,
  HDFS: 0.9975,
  HPC: 0.887,
  Hadoop: 0.9475,
  HealthApp: 0.78,
  Linux: 0.69,
  Mac: 0.7865,
  OpenSSH: 0.7875,
  OpenStack: 0.7325,
  Proxifier: 0.5265,
  Spark: 0.92,
  Thunderbird: 0.955,
  Windows: 0.997,
  Zookeeper: 0.9665,
};

/** Mines messages with the defaults; the group of every line and the final template of each group. */
function mine(messages) {
  // Templates merged later (a position found variable) take their lines with them.
  const mergedInto = new Map();
  const miner = new TemplateMiner({ ...tuning, onMerge: (from, into) => mergedInto.set(from.id, into.id) });
  const ids = messages.map((message) => miner.add(message).id);
  const find = (id) => {
    while (mergedInto.has(id)) id = mergedInto.get(id);
    return id;
  };
  const templates = new Map(miner.clusters().map((cluster) => [cluster.id, cluster.tokens.join(' ')]));
  return { predicted: ids.map(find), templateOf: (id) => templates.get(id) };
}

function measure(messages, truth) {
  const { predicted, templateOf } = mine(messages);
  const accuracy = templateAccuracy(predicted, templateOf, truth.eventIds, truth.templates);
  return { ga: groupingAccuracy(predicted, truth.eventIds), pa: accuracy.parsing, fta: accuracy.templates };
}

const rows = [];
for (const system of [...TRAIN, ...HELD_OUT]) {
  let truth;
  try {
    truth = readSystem(dataDir, system);
  } catch (error) {
    if (error instanceof LoghubDataError) fail(error.message);
    throw error;
  }
  const parser = new FileLineParser(truth.raw);
  rows.push({
    system,
    set: TRAIN.includes(system) ? 'train' : 'held-out',
    lines: truth.raw.length,
    events: new Set(truth.eventIds).size,
    drain: DRAIN_REFERENCE[system] ?? Number.NaN,
    format: parser.format.name,
    content: measure(truth.content, truth),
    raw: measure(
      truth.raw.map((line) => parser.parse(line).message),
      truth,
    ),
  });
}

const mean = (list, pick) => list.reduce((sum, row) => sum + pick(row), 0) / list.length;
const summary = (list) => ({
  systems: list.length,
  content: { ga: mean(list, (r) => r.content.ga), pa: mean(list, (r) => r.content.pa), fta: mean(list, (r) => r.content.fta) },
  raw: {
    ga: mean(list, (r) => r.raw.ga),
    pa: mean(list, (r) => r.raw.pa),
    fta: mean(list, (r) => r.raw.fta),
    minGa: Math.min(...list.map((r) => r.raw.ga)),
  },
  drain: mean(list, (r) => r.drain),
});
const totals = {
  train: summary(rows.filter((r) => r.set === 'train')),
  heldOut: summary(rows.filter((r) => r.set === 'held-out')),
  all: summary(rows),
};

if (json) {
  console.log(JSON.stringify({ dataDir, rows, totals }, null, 2));
} else {
  const widths = [12, 9, 7, 8, 8, 8, 8, 8, 8, 8, 14];
  const line = (cells) =>
    console.log(
      cells
        .map((cell, i) => String(cell).padEnd(widths[i] ?? 8))
        .join(' ')
        .trimEnd(),
    );
  const f = (value) => value.toFixed(3);
  line(['system', 'set', 'events', 'GA', 'PA', 'FTA', 'raw GA', 'raw PA', 'raw FTA', 'Drain*', 'header format']);
  const print = (list) => {
    for (const r of list) {
      line([r.system, r.set, r.events, f(r.content.ga), f(r.content.pa), f(r.content.fta), f(r.raw.ga), f(r.raw.pa), f(r.raw.fta), f(r.drain), r.format]);
    }
  };
  const average = (name, s) =>
    line([
      name,
      '',
      '',
      f(s.content.ga),
      f(s.content.pa),
      f(s.content.fta),
      f(s.raw.ga),
      f(s.raw.pa),
      f(s.raw.fta),
      f(s.drain),
      `min raw GA ${f(s.raw.minGa)}`,
    ]);
  print(rows.filter((r) => r.set === 'train'));
  average('avg train', totals.train);
  print(rows.filter((r) => r.set === 'held-out'));
  average('avg held-out', totals.heldOut);
  average('avg all 16', totals.all);
  console.log('GA grouping accuracy, PA parsing accuracy, FTA template F1; columns without "raw" are on the message column.');
  console.log('* Drain as published, tuned per system, on the message column (GA); this miner uses one setting for all systems.');
}
