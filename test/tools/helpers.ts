/**
 * Test helpers for the built-in tools: a hand-built ToolContext (the runtime normally provides it) and
 * temporary directories on the real file system.
 */
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { silentLogger } from '../../src/core/logger.js';
import type { JsonValue } from '../../src/core/task.js';
import type { ToolContext } from '../../src/core/tool.js';

/** A ToolContext that records what the tool reports. */
export interface RecordingContext extends ToolContext {
  readonly controller: AbortController;
  /** Every `progress` call as `[done, total, message]`. */
  readonly progressCalls: [number, number | undefined, string | undefined][];
  /** statusMessage as the runtime renders each progress call (`"<message> (done/total)"`, see ToolContext). */
  readonly statuses: string[];
  /** What `ownerState.put` stored, as JSON (the runtime keeps it in the task store; see the store contract). */
  readonly state: Map<string, string>;
}

/**
 * A context for calling a tool's `run` directly.
 *
 * @param onProgress - called after each progress report (e.g. to abort part-way).
 * @param deniedPaths - paths the tool must not touch (the server's state); none by default.
 */
export function makeContext(
  roots: readonly string[],
  onProgress?: (done: number, total: number | undefined, context: RecordingContext) => void,
  deniedPaths: readonly string[] = [],
): RecordingContext {
  const controller = new AbortController();
  const progressCalls: RecordingContext['progressCalls'] = [];
  const statuses: string[] = [];
  const state = new Map<string, string>();
  const context: RecordingContext = {
    controller,
    progressCalls,
    statuses,
    state,
    ownerState: {
      async get(key) {
        const json = state.get(key);
        return json === undefined ? undefined : (JSON.parse(json) as JsonValue);
      },
      async put(key, value) {
        state.set(key, JSON.stringify(value));
      },
    },
    signal: controller.signal,
    taskId: null,
    shadow: { observe() {} },
    roots,
    deniedPaths,
    logger: silentLogger,
    setStatus(message) {
      statuses.push(message);
    },
    progress(done, total, message) {
      progressCalls.push([done, total, message]);
      statuses.push(`${message ?? 'progress'} (${done}${total === undefined ? '' : `/${total}`})`);
      onProgress?.(done, total, context);
    },
    async step<T extends JsonValue>(_name: string, fn: () => T | Promise<T>): Promise<T> {
      return fn();
    },
    // No ledger here: the effect is performed at once (the ledger's own behaviour is tested end to end).
    async operation(spec, perform) {
      const operationId = `op-${spec.key}`;
      return { operationId, receipt: await perform(operationId), replayed: false };
    },
    gathered: undefined,
    async elicit() {
      throw new Error('this test context cannot ask for input');
    },
    async elicitAll() {
      throw new Error('this test context cannot ask for input');
    },
  };
  return context;
}

/** A fresh directory (real path) removed by the returned cleanup. */
export async function makeTempDir(prefix: string): Promise<{ dir: string; cleanup(): Promise<void> }> {
  const dir = await realpath(await mkdtemp(path.join(tmpdir(), `${prefix}-`)));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * `count` lines of four random six-letter words: the worst case for a template miner, as nothing repeats and
 * nothing looks like a variable to mask. Seeded, so that a failure reproduces.
 */
export function highCardinalityLines(count: number, seed = 1): string[] {
  // mulberry32: small, fast and good enough to make words that never repeat in practice.
  let state = seed >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  const word = () => Array.from({ length: 6 }, () => String.fromCharCode(97 + Math.floor(random() * 26))).join('');
  return Array.from({ length: count }, () => `${word()} ${word()} ${word()} ${word()}`);
}
