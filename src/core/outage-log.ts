import type { Logger } from './logger.js';
import { StoreError } from './store-error.js';

/**
 * While the task store is unreachable every request, tool context call, batch and timer fails with the same cause:
 * measured with 8 running tools and 4 watchers, a 10 s PostgreSQL outage wrote 5,777 error lines with stacks (7 MB)
 * to one process's log. An operator needs the first line, its cause and how many followed — not each of them.
 */

/** How long repeats of one outage line are counted instead of written, in ms. */
export const OUTAGE_LOG_WINDOW_MS = 10_000;

/** Most distinct causes a summary names; the rest are counted together. */
const MAX_CAUSES = 5;

/** What {@link coalesceOutageLogs} counts while a window is open, per line (level and message). */
interface Window {
  readonly level: Level;
  readonly message: string | undefined;
  readonly started: number;
  repeats: number;
  /** The repeats' `err.message`s and how often each came (at most {@link MAX_CAUSES}; see `otherCauses`). */
  readonly causes: Map<string, number>;
  otherCauses: number;
}

const COALESCED = Symbol('coalesceOutageLogs');
/** The wrapped root's "write every open window's summary now" (see {@link flushOutageLogs}). */
const FLUSH = Symbol('flushOutageLogs');

type Level = 'warn' | 'error';

/**
 * `logger`, with the lines that report an outage of the task store coalesced: an `error` or `warn` whose `err` is a
 * {@link StoreError} `unavailable` is written whole (stack and cause) the first time its message is logged, then
 * for {@link OUTAGE_LOG_WINDOW_MS} the same level and message are only counted; when that window ends one line at
 * the same level says how many were left out (`repeats`, `windowMs`, `causes`: each distinct `err.message` and its
 * count, five at most, `otherCauses` for the rest), and the next failure starts a new window. The summary is written
 * through `logger` itself, not through the child that opened the window: its repeats came from many children (other
 * tasks, other components), whose bindings it must not claim.
 *
 * A `fault` (a store that stopped after a failed fsync, a full disk) is coalesced too, but per cause: the same level,
 * message and `err.message` are counted, while a different fault under the same message is written whole — a stopped
 * SQLite store fails every later write with one identical fault, and each distinct fault still matters. Every other
 * line — another store error code (`schema_mismatch`, `conflict`), `info`, `debug`, another message — is written as
 * before. Children (`child()`) share the windows, so the store's, the server's and the worker's lines of one process
 * are counted together.
 *
 * The CLI's logger (`serve`, `worker`) is wrapped with it and calls {@link flushOutageLogs} when the process exits,
 * however it ends, so the count of a window still open is written; a library user can do the same. Wrapping twice is a no-op. `now` and
 * `setTimer` exist for tests; the timer is unref'd, so a window left open never keeps a process alive.
 */
export function coalesceOutageLogs(
  logger: Logger,
  options: { windowMs?: number; now?: () => number; setTimer?: (fn: () => void, ms: number) => void } = {},
): Logger {
  if ((logger as { [COALESCED]?: true })[COALESCED]) return logger;
  const windowMs = options.windowMs ?? OUTAGE_LOG_WINDOW_MS;
  const now = options.now ?? Date.now;
  const setTimer =
    options.setTimer ??
    ((fn: () => void, ms: number) => {
      setTimeout(fn, ms).unref();
    });
  const windows = new Map<string, Window>();
  const countCause = (window: Window, cause: string): void => {
    const seen = window.causes.get(cause);
    if (seen !== undefined) window.causes.set(cause, seen + 1);
    else if (window.causes.size < MAX_CAUSES) window.causes.set(cause, 1);
    else window.otherCauses += 1;
  };

  /** End the window of `key` (if still open): one summary line when anything was left out. */
  const close = (key: string): void => {
    const closed = windows.get(key);
    windows.delete(key);
    if (!closed || closed.repeats === 0) return;
    logger[closed.level](
      {
        repeats: closed.repeats,
        windowMs: now() - closed.started,
        causes: Object.fromEntries(closed.causes),
        ...(closed.otherCauses > 0 ? { otherCauses: closed.otherCauses } : {}),
      },
      `${closed.message ?? 'task store unavailable'} — ${closed.repeats} more like it not logged`,
    );
  };

  const wrap = (target: Logger): Logger => {
    const write = (level: Level) => (object: object, message?: string) => {
      const err = (object as { err?: unknown }).err;
      if (!(err instanceof StoreError) || (err.code !== 'unavailable' && err.code !== 'fault')) return target[level](object, message);
      // An outage's causes vary (refused, timed out) and are counted under one line; a fault is one line per cause.
      const key = `${level}\u0000${message ?? ''}${err.code === 'fault' ? `\u0000${err.message}` : ''}`;
      const open = windows.get(key);
      if (open) {
        open.repeats += 1;
        countCause(open, err.message);
        return;
      }
      const window: Window = { level, message, started: now(), repeats: 0, causes: new Map(), otherCauses: 0 };
      windows.set(key, window);
      target[level]({ ...object, outageLogWindowMs: windowMs }, message);
      // Only this window: one flushed early may have been followed by a new one under the same key.
      setTimer(() => {
        if (windows.get(key) === window) close(key);
      }, windowMs);
    };
    return Object.assign(
      {
        debug: (object: object, message?: string) => target.debug(object, message),
        info: (object: object, message?: string) => target.info(object, message),
        warn: write('warn'),
        error: write('error'),
        child: (bindings: object) => wrap(target.child(bindings)),
      },
      { [COALESCED]: true as const, [FLUSH]: () => [...windows.keys()].forEach(close) },
    );
  };
  return wrap(logger);
}

/**
 * Write the summary of every window {@link coalesceOutageLogs} still holds open, now (call it before the process
 * exits: a window's timer does not keep the process alive, so its count would be lost). `logger` is the wrapped
 * logger or any of its children; a logger that was not wrapped is left alone. Windows are closed: a later failure
 * opens a new one.
 */
export function flushOutageLogs(logger: Logger): void {
  (logger as { [FLUSH]?: () => void })[FLUSH]?.();
}
