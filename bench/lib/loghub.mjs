// The loghub 2k samples (https://github.com/logpai/loghub): where they are, how they are read, and the accuracy
// metrics computed on them. One module for the grouping benchmark and for the tests, so both find the data the
// same way and measure the same thing. The files are read in place, never copied.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository this file belongs to. */
export const REPOSITORY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Where the data is expected, relative to the repository (CI has it there). */
export const RELATIVE_LOCATION = path.join('..', 'shared', 'data', 'loghub');

/**
 * Systems whose results may steer the header detection and the miner ("train"), and the others ("held-out"),
 * whose figures are reported apart. Fixed before tuning by a rule that looks at nothing but the names: systems
 * sorted by name, every other one held out.
 */
export const SYSTEMS = [
  'Android',
  'Apache',
  'BGL',
  'HDFS',
  'HPC',
  'Hadoop',
  'HealthApp',
  'Linux',
  'Mac',
  'OpenSSH',
  'OpenStack',
  'Proxifier',
  'Spark',
  'Thunderbird',
  'Windows',
  'Zookeeper',
];
export const TRAIN = SYSTEMS.filter((_, i) => i % 2 === 0);
export const HELD_OUT = SYSTEMS.filter((_, i) => i % 2 === 1);

/**
 * The loghub directory: `explicit` when given (a command-line argument), else `MCP_TASKS_LOGHUB`, else
 * `../shared/data/loghub` next to the repository, else the nearest `shared/data/loghub` further up (a git
 * worktree one level deeper than the main clone shares its data).
 *
 * @returns the first existing candidate, or `{missing}` with the documented default when none exists.
 */
export function locateLoghub(explicit = process.env.MCP_TASKS_LOGHUB, repository = REPOSITORY) {
  if (explicit) return { dir: path.resolve(explicit), candidates: [path.resolve(explicit)] };
  const candidates = [];
  for (let dir = path.dirname(repository); ; dir = path.dirname(dir)) {
    candidates.push(path.join(dir, 'shared', 'data', 'loghub'));
    if (path.dirname(dir) === dir) break;
  }
  const found = candidates.find((candidate) => existsSync(candidate));
  return found ? { dir: found, candidates } : { dir: null, missing: candidates[0], candidates };
}

/** How to provide the data, for error messages of the bench and the tests. */
export function missingDataHelp(missing) {
  return (
    `loghub data not found: ${missing} is not a directory.\n` +
    `Put the loghub 2k samples there (one directory per system: Apache/Apache_2k.log, Apache/Apache_2k.log_structured.csv, …; ` +
    `the repository's ${RELATIVE_LOCATION}), set MCP_TASKS_LOGHUB=/path/to/loghub, ` +
    'or pass the directory: npm run bench:grouping -- /path/to/loghub'
  );
}

/** Parses one CSV record (RFC 4180 quoting); loghub records never span lines. */
export function parseCsvLine(line) {
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

/** Lines of a file without their terminators (`\r\n` or `\n`); a final empty line is dropped. */
function readLines(file) {
  const text = readFileSync(file, 'utf8');
  const lines = text.split(/\r?\n/);
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

/** Thrown for a missing or incomplete system directory (a setup mistake, reported without a stack). */
export class LoghubDataError extends Error {}

/**
 * One system's sample: raw lines, and per line the ground truth (message column, event id, event template).
 *
 * @throws LoghubDataError when a file is missing or the files disagree in length.
 */
export function readSystem(dir, system) {
  const base = path.join(dir, system, `${system}_2k.log`);
  for (const file of [base, `${base}_structured.csv`]) {
    if (!existsSync(file)) {
      throw new LoghubDataError(`cannot read ${file}: each system directory needs <System>_2k.log and <System>_2k.log_structured.csv`);
    }
  }
  const [header, ...rows] = readLines(`${base}_structured.csv`).filter((line) => line !== '');
  const columns = parseCsvLine(header);
  const at = (name) => columns.indexOf(name);
  const parsed = rows.map(parseCsvLine);
  const raw = readLines(base).slice(0, parsed.length);
  if (raw.length !== parsed.length) throw new LoghubDataError(`${system}: ${raw.length} lines vs ${parsed.length} labels`);
  return {
    system,
    raw,
    content: parsed.map((r) => r[at('Content')]),
    eventIds: parsed.map((r) => r[at('EventId')]),
    templates: parsed.map((r) => r[at('EventTemplate')]),
  };
}

/**
 * Grouping accuracy (Zhu et al., ICSE-SEIP 2019): the share of lines whose predicted group holds exactly the
 * lines of their ground-truth event.
 *
 * @param predicted - a group id per line.
 */
export function groupingAccuracy(predicted, truth) {
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
 * A template reduced to what both sides can be compared on: whitespace removed and every run of wildcards one
 * `<*>` (loghub writes `bytes<*>sent` where a miner splitting on spaces writes `bytes <*> sent`).
 */
export function normalizeTemplate(template) {
  return template.replace(/\s+/g, '').replace(/(?:<\*>)+/g, '<*>');
}

/**
 * Template accuracy, two ways:
 * - `parsing`: the share of lines whose predicted template text equals their event's template (normalised, see
 *   {@link normalizeTemplate}): Parsing Accuracy (Dai et al., Logram, TSE 2020);
 * - `templates`: FTA of Khan et al. (ICSE 2022): the harmonic mean of precision and recall over templates, a
 *   predicted template counting as correct when its group is exactly one event's lines and its text equals that
 *   event's template.
 *
 * @param predicted - a group id per line; `templateOf(id)` its final template text.
 */
export function templateAccuracy(predicted, templateOf, truthIds, truthTemplates) {
  let parsing = 0;
  predicted.forEach((group, line) => {
    if (normalizeTemplate(templateOf(group)) === normalizeTemplate(truthTemplates[line])) parsing++;
  });
  const truthSize = new Map();
  for (const id of truthIds) truthSize.set(id, (truthSize.get(id) ?? 0) + 1);
  const members = new Map();
  predicted.forEach((group, line) => {
    const list = members.get(group) ?? [];
    list.push(line);
    members.set(group, list);
  });
  let correct = 0;
  for (const [group, lines] of members) {
    const event = truthIds[lines[0]];
    const exact = lines.every((line) => truthIds[line] === event) && truthSize.get(event) === lines.length;
    if (exact && normalizeTemplate(templateOf(group)) === normalizeTemplate(truthTemplates[lines[0]])) correct++;
  }
  const precision = members.size === 0 ? 0 : correct / members.size;
  const recall = truthSize.size === 0 ? 0 : correct / truthSize.size;
  return {
    parsing: parsing / predicted.length,
    templates: precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall),
  };
}
