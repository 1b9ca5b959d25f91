/**
 * Severity of a log line from its header: syslog `<pri>`, glog/logcat one-letter levels, level words in the
 * spellings of common frameworks (`WARN`, `WARNING`, `[error]`, `Info`, `SEVERE`, `level=warn`, …).
 */

/** Normalised severities, most severe first. */
export const SEVERITIES = ['FATAL', 'ERROR', 'WARN', 'INFO', 'DEBUG', 'TRACE'] as const;
export type Severity = (typeof SEVERITIES)[number];

const WORDS: Record<string, Severity> = {
  fatal: 'FATAL',
  critical: 'FATAL',
  crit: 'FATAL',
  emerg: 'FATAL',
  emergency: 'FATAL',
  alert: 'FATAL',
  panic: 'FATAL',
  severe: 'FATAL',
  error: 'ERROR',
  err: 'ERROR',
  warn: 'WARN',
  warning: 'WARN',
  info: 'INFO',
  information: 'INFO',
  notice: 'INFO',
  debug: 'DEBUG',
  dbg: 'DEBUG',
  fine: 'DEBUG',
  finer: 'DEBUG',
  verbose: 'DEBUG',
  config: 'DEBUG',
  trace: 'TRACE',
  finest: 'TRACE',
};
const LETTERS: Record<string, Severity> = { F: 'FATAL', A: 'FATAL', E: 'ERROR', W: 'WARN', I: 'INFO', D: 'DEBUG', V: 'TRACE' };
/** syslog severity (pri % 8): emerg, alert, crit, err, warning, notice, info, debug. */
const SYSLOG: readonly Severity[] = ['FATAL', 'FATAL', 'FATAL', 'ERROR', 'WARN', 'INFO', 'INFO', 'DEBUG'];

const LEVEL_WORDS = new Map(Object.entries(WORDS));
/** Lengths of the level words: others are not lower-cased to be looked up (only `A`–`Z` lower-case to them). */
const MIN_LEVEL_WORD = Math.min(...Object.keys(WORDS).map((word) => word.length));
const MAX_LEVEL_WORD = Math.max(...Object.keys(WORDS).map((word) => word.length));

/** The severity a level word names (`WARN`, `warning`, `Info`, `crit`…), or `null`; case-insensitive. */
export function levelWord(word: string): Severity | null {
  if (word.length < MIN_LEVEL_WORD || word.length > MAX_LEVEL_WORD) return null;
  return LEVEL_WORDS.get(word.toLowerCase()) ?? null;
}

/** The severity of a one-letter level (logcat `D`, glog `E`), or `null`. */
export function levelLetter(letter: string): Severity | null {
  return Object.hasOwn(LETTERS, letter) ? (LETTERS[letter] as Severity) : null;
}

const HEAD_LENGTH = 160;
const PRI = /^<(\d{1,3})>/;
/** glog `E0102 15:04:05.000000` and logcat brief `E/Tag(  123):` (but not `I/O error`). */
const LETTER_PREFIX = /^([FEWIDVA])(?:\d{4} \d|\/[^\s(:]+(?:\(\s*\d+\))?:)/;
/** logcat threadtime: `  1702  2395 D WindowManager: …` */
const LETTER_BEFORE_TAG = /(?:^|\s)([FEWIDVA]) +[^\s:]{1,64}: /;
const WORD = new RegExp(String.raw`(?<![\w.\-/])(?:level"?\s*[=:]\s*"?)?\[?(${Object.keys(WORDS).join('|')})\]?(?![\w\-/])(:?)`, 'gi');

/**
 * The severity of `line`, or `null` when its header names none.
 *
 * A level word counts when it is upper case (`ERROR`), bracketed (`[error]`), followed by a colon (`error:`),
 * given as `level=…`, or is the first word after the timestamp (Windows CBS's `Info`): lower-case words inside a
 * message ("connection error") are text, not a level.
 *
 * @param messageStart - index where the line's message begins after its timestamp (0 when there is none).
 */
export function parseSeverity(line: string, messageStart = 0): Severity | null {
  const pri = PRI.exec(line);
  if (pri) return SYSLOG[Number(pri[1]) % 8] ?? null;
  const head = line.length > HEAD_LENGTH ? line.slice(0, HEAD_LENGTH) : line;
  const letter = LETTER_PREFIX.exec(head);
  if (letter) return LETTERS[letter[1] as string] ?? null;
  WORD.lastIndex = 0;
  for (let m = WORD.exec(head); m; m = WORD.exec(head)) {
    const word = m[1] as string;
    const text = m[0];
    const firstAfterTimestamp = /^[\s\-:,|\]]*$/.test(head.slice(messageStart, m.index));
    if (word === word.toUpperCase() || text.startsWith('[') || text.toLowerCase().startsWith('level') || m[2] === ':' || firstAfterTimestamp) {
      return WORDS[word.toLowerCase()] ?? null;
    }
  }
  const tagged = LETTER_BEFORE_TAG.exec(head.slice(messageStart));
  return tagged ? (LETTERS[tagged[1] as string] ?? null) : null;
}

/**
 * What a template's words imply when its lines state no level: `panic:`, `Kernel panic`, `FATAL`, `Out of memory`
 * → FATAL; `error`, `exception`, `Traceback`, `segfault`, `core dumped`, an HTTP 5xx (`5xx` in an access-log
 * template) → ERROR; `failed`, `failure`, `denied`, `refused`, `timed out`, `timeout`, `unreachable`, `cannot`,
 * `could not`, `unable to`, `warning`, `deprecated`, an HTTP 4xx → WARN; an HTTP 1xx–3xx → INFO. Negated counts (`0 errors`, `no error`)
 * imply nothing, nor does a keyword naming a feature (`exception support`, `error reporting`); an error the line
 * says was corrected (`detected and corrected`) implies WARN. Linear in the text.
 */
export function impliedSeverity(text: string): Severity | null {
  if (IMPLIED_FATAL.test(text)) return 'FATAL';
  // A keyword that names a feature (`SIMD FPU exception support... done`, `error reporting enabled`) is no event:
  // such boot and configuration lines were NEW ERRORs on the first screen of a report (issue 26 item 12).
  const events = NEUTRAL_KEYWORD.test(text) ? text.replace(NEUTRAL_KEYWORDS, ' ') : text;
  if (IMPLIED_ERROR.test(events) && !NEGATED_ERROR.test(events)) return CORRECTED.test(events) ? 'WARN' : 'ERROR';
  if (IMPLIED_WARN.test(events) && !NEGATED_WARN.test(events)) return 'WARN';
  if (IMPLIED_INFO.test(text)) return 'INFO';
  return null;
}

const IMPLIED_FATAL = /\bpanic\b|\bFATAL\b|\bout of memory\b|\boom-killer\b|\bemergency\b/i;
const IMPLIED_ERROR =
  /\berror(?:s|ed)?\b|\bexception\b|\bTraceback\b|\bsegfault\b|\bsegmentation fault\b|\bcore dumped\b|\bcrash(?:ed)?\b|\bcorrupt(?:ed|ion)?\b|(?:^|\s)5xx(?:\s|$)/i;
const NEGATED_ERROR = /\b(?:0|no|zero|without) (?:errors?|exceptions?)\b/i;
/** An error keyword naming a capability or a setting rather than an occurrence. */
const NEUTRAL_KEYWORD =
  /\b(?:error|exception|crash|corruption)s?(?:\(s\))? (?:support|handling|handlers?|reporting|correction|checking|detection|recovery|logging|log level|dump(?:s|ing)? (?:enabled|disabled))\b/i;
/** Every occurrence of {@link NEUTRAL_KEYWORD}, built once (not per template). */
const NEUTRAL_KEYWORDS = new RegExp(NEUTRAL_KEYWORD.source, 'gi');
/** An error the system says it corrected (ECC, parity): worth a look, not an incident. */
const CORRECTED = /\b(?:detected and )?corrected\b|\battempting to correct\b/i;
const IMPLIED_WARN =
  /\bfail(?:ed|ure|s)?\b|\bdenied\b|\brefused\b|\btimed out\b|\btimeout\b|\bunreachable\b|\bcannot\b|\bcould not\b|\bcouldn't\b|\bunable to\b|\bwarn(?:ing)?s?\b|\bdeprecated\b|(?:^|\s)4xx(?:\s|$)/i;
/** An access-log status 2xx or 3xx. */
const IMPLIED_INFO = /(?:^|\s)[123]xx(?:\s|$)/;
const NEGATED_WARN = /\b(?:0|no|zero|without) (?:failures?|warnings?)\b/i;
