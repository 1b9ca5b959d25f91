/**
 * Which files of a tree count as logs: `*.log`, rotated `*.log.N`, gzip files other than archives and data
 * (`*.gz` except `*.tar.gz`, `*.csv.gz`, …), the extension-less classics of `/var/log` (`syslog`, `messages`,
 * with their rotations), and whatever matches the caller's `include` glob.
 */
import picomatch from 'picomatch';

const LOG_NAME = /(?:\.log|^syslog|^messages|^dmesg)(?:\.\d+)?(?:\.gz)?$/;
/** Unbalanced brackets are an error rather than literal characters: `[` is far more likely a typo. */
const GLOB_OPTIONS = { dot: true, strictBrackets: true } as const;
const NOT_A_LOG_GZ = /\.(?:tar|csv|tsv|json|sql|xml|parquet)\.gz$/;

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
    if (LOG_NAME.test(name) || (name.endsWith('.gz') && !NOT_A_LOG_GZ.test(name) && !name.endsWith('.tgz'))) {
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
