/**
 * Which files of a tree count as logs: `*.log`, rotated `*.log.N`, gzip files other than archives and data
 * (`*.gz` except `*.tar.gz`, `*.csv.gz`, …), the extension-less classics of `/var/log` (`syslog`, `messages`,
 * `dmesg`, with their rotations), and whatever matches the caller's `include` glob. The rule is also stated in
 * words, from the same lists, for the tool's description.
 */
import picomatch from 'picomatch';

/** Log files of `/var/log` named without an extension. */
const CLASSIC_NAMES = ['syslog', 'messages', 'dmesg'];
/** Compressed archives and data: `.gz` files that are not logs. */
const DATA_EXTENSIONS = ['tar', 'csv', 'tsv', 'json', 'sql', 'xml', 'parquet'];
const LOG_NAME = new RegExp(String.raw`(?:\.log|^(?:${CLASSIC_NAMES.join('|')}))(?:\.\d+)?(?:\.gz)?$`);
const NOT_A_LOG_GZ = new RegExp(String.raw`\.(?:${DATA_EXTENSIONS.join('|')})\.gz$`);
/** Unbalanced brackets are an error rather than literal characters: `[` is far more likely a typo. */
const GLOB_OPTIONS = { dot: true, strictBrackets: true } as const;

/** Which files {@link logFileSelector} picks, in words (for the tool's description, so the two cannot drift). */
export const LOG_FILES_DESCRIPTION =
  `*.log and rotated *.log.N; files named ${CLASSIC_NAMES.join(', ')} and their rotations (syslog.1); all of ` +
  `these gzipped (app.log.2.gz); every other *.gz except ${DATA_EXTENSIONS.map((e) => `*.${e}.gz`).join(', ')}; ` +
  'and files matching include';

/**
 * A predicate over `/`-separated paths relative to the scanned directory.
 *
 * @param include - optional glob (picomatch syntax, e.g. `**\/*.txt`); a pattern without `/` is matched against
 *   the base name. Matching files are scanned in addition to the default log names.
 */
export function logFileSelector(include?: string | null): (relative: string) => boolean {
  const matchesInclude = include ? picomatch(include, { ...GLOB_OPTIONS, basename: !include.includes('/') }) : null;
  return (relative) => {
    const name = relative.slice(relative.lastIndexOf('/') + 1);
    if (LOG_NAME.test(name) || (name.endsWith('.gz') && !NOT_A_LOG_GZ.test(name))) {
      return true;
    }
    return matchesInclude !== null && matchesInclude(relative);
  };
}

/** Whether a selected file is read through gunzip. */
export function isGzip(relative: string): boolean {
  return relative.endsWith('.gz');
}

/** Whether `glob` compiles; used to reject a bad `include` as an input error before any work starts. */
export function isValidGlob(glob: string): boolean {
  try {
    picomatch.makeRe(glob, GLOB_OPTIONS);
    return true;
  } catch {
    return false;
  }
}
