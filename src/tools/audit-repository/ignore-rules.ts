/**
 * `.gitignore` rules for a tree that is not a git work tree (an exported source archive, a copy): the rules of
 * every `.gitignore` from the scanned directory down, each relative to its own directory, a deeper file
 * overriding a shallower one and a later rule an earlier one, as git applies them (matching by the `ignore`
 * package, the implementation ESLint and others use). `.gitignore` files are read through the confinement, at
 * most {@link MAX_IGNORE_BYTES} each.
 */
import path from 'node:path';

import ignoreModule, { type Ignore } from 'ignore';

import type { Confinement } from '../roots.js';

// A CommonJS module whose types declare only a default export: the factory is `module.exports.default` too.
const ignore = ignoreModule.default;

/** Bytes of one `.gitignore` read at most (a larger one is read up to there). */
export const MAX_IGNORE_BYTES = 256 * 1024;

/** The ignore rules met so far in a walk; see the module comment. */
export class IgnoreRules {
  /** Rules per directory (relative, `''` for the start), for directories that have a `.gitignore`. */
  private readonly rules = new Map<string, Ignore>();
  /** Files and directories left out by a rule (a directory counts once, its content is not listed). */
  ignored = 0;

  constructor(private readonly confinement: Confinement) {}

  /** Reads the `.gitignore` of a directory about to be listed, if any. */
  async enter(relative: string, absolute: string): Promise<void> {
    const text = await this.read(path.join(absolute, '.gitignore'));
    if (text !== null) this.rules.set(relative, ignore().add(text));
  }

  /** Whether an entry is ignored (counts ignored files). */
  excludes(relative: string, isDirectory: boolean): boolean {
    let ignored = false;
    // From the outermost directory to the innermost: a deeper .gitignore decides last.
    for (let at = relative.indexOf('/'), parent = ''; ; at = relative.indexOf('/', at + 1)) {
      const rules = this.rules.get(parent);
      if (rules) {
        const own = parent === '' ? relative : relative.slice(parent.length + 1);
        const verdict = rules.test(isDirectory ? `${own}/` : own);
        if (verdict.ignored) ignored = true;
        else if (verdict.unignored) ignored = false;
      }
      if (at < 0) break;
      parent = relative.slice(0, at);
    }
    if (ignored) this.ignored++;
    return ignored;
  }

  private async read(file: string): Promise<string | null> {
    const handle = await this.confinement.openForReading(file).catch(() => null);
    if (!handle) return null;
    try {
      const buffer = Buffer.alloc(MAX_IGNORE_BYTES);
      const { bytesRead } = await handle.read(buffer, 0, MAX_IGNORE_BYTES, 0);
      return buffer.subarray(0, bytesRead).toString('utf8');
    } finally {
      await handle.close();
    }
  }
}
