import { createHash } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import { dirname } from 'node:path';

import type { Logger } from '../core/logger.js';
import type { Authenticator, Principal } from '../core/owner.js';
import { parseTokenFile, readTokenFileText, TokenFileAuthenticator, type TokenFileOptions } from './token-file.js';

/** Options of {@link TokenFileWatcher}. */
export interface TokenFileWatcherOptions extends TokenFileOptions {
  logger: Logger;
  /** Quiet time after the last change event before the file is read again (ms). @defaultValue 200 */
  debounceMs?: number;
}

/** Why a reload was attempted (for the log line). */
export type ReloadTrigger = 'signal' | 'change';

/**
 * A token file that can change while the server runs: `reload()` (the CLI calls it on SIGHUP) and, after
 * `watch()`, every change in the file's directory re-read it after a short debounce. The directory is watched,
 * not the file, because editors and secret mounts (a Kubernetes `..data` symlink swap) replace the file rather
 * than write into it. A new file that is unreadable or invalid is refused: the previous tokens stay in force and
 * the problem is logged as an error. Unchanged content is not reloaded. Tokens removed from the file are refused
 * from the next request on; their tasks stay with their owner key.
 */
export class TokenFileWatcher implements Authenticator {
  private current: TokenFileAuthenticator;
  private digest: string;
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;

  /** @throws TasksError `-32602` when the file is unreadable or invalid at start (a usage error then). */
  constructor(
    readonly path: string,
    private readonly options: TokenFileWatcherOptions,
  ) {
    const text = this.read();
    this.current = new TokenFileAuthenticator(parseTokenFile(text, path), options);
    this.digest = digestOf(text);
  }

  verify(token: string): Promise<Principal> {
    return this.current.verify(token);
  }

  /** Tokens currently in force. */
  get size(): number {
    return this.current.size;
  }

  /**
   * Read the file again and put its tokens in force when they are valid and changed.
   * @returns `true` when new tokens are in force, `false` when the file was unchanged or refused (logged).
   */
  reload(trigger: ReloadTrigger): boolean {
    let text: string;
    let next: TokenFileAuthenticator;
    try {
      text = this.read();
      if (digestOf(text) === this.digest) return false;
      next = new TokenFileAuthenticator(parseTokenFile(text, this.path), this.options);
    } catch (error) {
      this.options.logger.error(
        { err: error, trigger, tokenFile: this.path, tokens: this.current.size },
        'token file not reloaded: keeping the previous tokens',
      );
      return false;
    }
    this.current = next;
    this.digest = digestOf(text);
    this.options.logger.info({ trigger, tokenFile: this.path, tokens: next.size }, 'token file reloaded');
    return true;
  }

  /** Reload on every change in the file's directory (debounced). Idempotent. */
  watch(): void {
    if (this.watcher) return;
    const debounceMs = this.options.debounceMs ?? 200;
    this.watcher = watch(dirname(this.path), { persistent: false }, () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.reload('change'), debounceMs);
      this.timer.unref();
    });
    this.watcher.on('error', (error) => this.options.logger.error({ err: error, tokenFile: this.path }, 'token file watch failed: reload with SIGHUP'));
  }

  /** Stop watching. */
  close(): void {
    clearTimeout(this.timer);
    this.watcher?.close();
    this.watcher = undefined;
  }

  private read(): string {
    return readTokenFileText(this.path);
  }
}

function digestOf(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
