import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { TokenFileWatcher } from '../../src/auth/token-file-watcher.js';
import { AuthenticationError } from '../../src/core/owner.js';
import { captureLogger } from '../helpers/capture-logger.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const A = 'watcher-token-a-0123456789';
const B = 'watcher-token-b-0123456789';
const file = (tokens: string[], scopes?: string[]) =>
  JSON.stringify({ tokens: tokens.map((token, i) => ({ token, issuer: 'i', subject: `s${i}`, tenant: 't', ...(scopes ? { scopes } : {}) })) });

describe('TokenFileWatcher', () => {
  const temp = makeTempDir('mcp-tasks-watcher-');
  const path = join(temp.dir, 'tokens.json');
  const watchers: TokenFileWatcher[] = [];
  afterEach(() => {
    for (const watcher of watchers.splice(0)) watcher.close();
  });
  const open = (debounceMs = 20) => {
    const { logger, lines } = captureLogger();
    const watcher = new TokenFileWatcher(path, { logger, debounceMs, defaultScopes: ['tasks:read', 'logs:read'] });
    watchers.push(watcher);
    return { watcher, lines };
  };

  it('reload("signal") puts a changed valid file in force; unchanged content and an invalid file change nothing', async () => {
    writeFileSync(path, file([A]));
    const { watcher, lines } = open();
    await expect(watcher.verify(B)).rejects.toBeInstanceOf(AuthenticationError);
    expect(watcher.reload('signal')).toBe(false);
    writeFileSync(path, file([A, B]));
    // Not watching: nothing changes until the signal.
    await new Promise((resolve) => setTimeout(resolve, 100));
    await expect(watcher.verify(B)).rejects.toBeInstanceOf(AuthenticationError);
    expect(watcher.reload('signal')).toBe(true);
    expect((await watcher.verify(B)).subject).toBe('s1');
    writeFileSync(path, '{"tokens": []}');
    expect(watcher.reload('signal')).toBe(false);
    expect((await watcher.verify(B)).subject).toBe('s1');
    expect(lines.find((line) => line.level === 'error')).toMatchObject({
      message: 'token file not reloaded: keeping the previous tokens',
      fields: { trigger: 'signal', tokens: 2 },
    });
    expect(lines.find((line) => line.message === 'token file reloaded')).toMatchObject({ fields: { trigger: 'signal', tokens: 2 } });
    expect(JSON.stringify(lines)).not.toContain(A);
  });

  it('watch() reloads after a change in the directory (also a file renamed over it), debounced', async () => {
    writeFileSync(path, file([A]));
    const { watcher, lines } = open();
    watcher.watch();
    writeFileSync(`${path}.new`, file([B], ['tasks:read']));
    renameSync(`${path}.new`, path);
    const deadline = Date.now() + 5000;
    while (!lines.some((line) => line.message === 'token file reloaded')) {
      if (Date.now() > deadline) throw new Error('no reload');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(lines.filter((line) => line.message === 'token file reloaded')).toHaveLength(1);
    expect((await watcher.verify(B)).scopes).toEqual(['tasks:read']);
    await expect(watcher.verify(A)).rejects.toThrow('Unknown bearer token');
  });

  it('an entry without scopes gets the default scopes (task and tool scopes)', async () => {
    writeFileSync(path, file([A]));
    expect((await open().watcher.verify(A)).scopes).toEqual(['tasks:read', 'logs:read']);
  });

  it('a missing or invalid file at start is an error naming the file', () => {
    expect(() => new TokenFileWatcher(join(temp.dir, 'missing.json'), { logger: captureLogger().logger })).toThrow(/cannot read token file .*missing\.json/);
    writeFileSync(path, file([A], ['bad scope']));
    expect(() => open()).toThrow(/OAuth scope token/);
  });
});
