/**
 * `writeOutputFile`, which `--output FILE` and `readResultResourceTo(uri, path)` write through: a regular file is
 * replaced in one rename by a complete file (never seen half-written), keeping its permission bits; a new file gets
 * `0666 & ~umask`; a write that fails leaves the path as it was and nothing beside it.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { destinationOf, terminalPieces, writeOutputFile } from '../../src/client/file-destination.js';

const root = mkdtempSync(join(tmpdir(), 'file-destination-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let directories = 0;
/** A new empty directory for one test, so that what is left beside FILE can be listed. */
function directory(): string {
  const path = join(root, `d${(directories += 1)}`);
  mkdirSync(path);
  return path;
}

async function write(file: FileHandle, text: string): Promise<void> {
  await file.write(text);
}

/** Spool files this process left in the OS temp directory (an `in-place` destination's). */
function spools(): string[] {
  return readdirSync(tmpdir()).filter((entry) => entry.startsWith(`.mcp-tasks-output.${process.pid}.`));
}

describe('writeOutputFile: a regular file', () => {
  it('is replaced in one rename: while the result is written, FILE still holds the old contents', async () => {
    const dir = directory();
    const path = join(dir, 'out.txt');
    writeFileSync(path, 'old');
    const before = statSync(path).ino;
    const written = await writeOutputFile(path, async (file) => {
      await write(file, 'new ');
      // Midway: the old file, whole, under its name; the new one beside it, hidden.
      expect(readFileSync(path, 'utf8')).toBe('old');
      expect(statSync(path).ino).toBe(before);
      expect(readdirSync(dir).filter((entry) => entry !== 'out.txt')).toEqual([expect.stringMatching(/^\.out\.txt\..*\.partial$/)]);
      await write(file, 'contents');
      return 42;
    });
    expect(written).toBe(42);
    expect(readFileSync(path, 'utf8')).toBe('new contents');
    expect(statSync(path).ino).not.toBe(before);
    expect(readdirSync(dir)).toEqual(['out.txt']);
  });

  it('keeps its permission bits, however narrow or wide', async () => {
    const dir = directory();
    for (const mode of [0o600, 0o640, 0o644, 0o755, 0o400]) {
      const path = join(dir, `mode-${mode.toString(8)}`);
      writeFileSync(path, 'old');
      chmodSync(path, mode);
      await writeOutputFile(path, (file) => write(file, 'new'));
      expect(statSync(path).mode & 0o7777, mode.toString(8)).toBe(mode);
      expect(readFileSync(path, 'utf8')).toBe('new');
    }
  });

  it('when new, gets 0666 & ~umask, as a shell\'s ">" gives it', async () => {
    const path = join(directory(), 'fresh');
    await writeOutputFile(path, (file) => write(file, 'new'));
    expect(statSync(path).mode & 0o777).toBe(0o666 & ~process.umask());
  });
});

describe('writeOutputFile: a write that fails', () => {
  for (const state of ['missing', 'existing'] as const) {
    it(`leaves a FILE that was ${state} as it was and nothing beside it, and throws the failure`, async () => {
      const dir = directory();
      const path = join(dir, 'out.txt');
      if (state === 'existing') {
        writeFileSync(path, 'old');
        chmodSync(path, 0o640);
      }
      const failure = new Error('the read failed midway');
      await expect(
        writeOutputFile(path, async (file) => {
          await write(file, 'part of a result');
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect(readdirSync(dir)).toEqual(state === 'existing' ? ['out.txt'] : []);
      if (state === 'existing') {
        expect(readFileSync(path, 'utf8')).toBe('old');
        expect(statSync(path).mode & 0o7777).toBe(0o640);
      }
    });
  }

  it('writes nothing into a device written in place, and leaves no spool file', async () => {
    expect((await destinationOf('/dev/null')).kind).toBe('in-place');
    const failure = new Error('aborted');
    let spooled: string[] = [];
    await expect(
      writeOutputFile('/dev/null', async (file) => {
        await write(file, 'part');
        spooled = spools();
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(spooled).toHaveLength(1); // it was written to a spool file, which is gone
    expect(spools()).toEqual([]);
    expect(statSync('/dev/null').isCharacterDevice()).toBe(true);
  });
});

describe('destinationOf', () => {
  it('replaces a missing path or a regular file, writes a device in place, refuses a directory', async () => {
    const dir = directory();
    const file = join(dir, 'file');
    writeFileSync(file, 'x');
    chmodSync(file, 0o640);
    expect(await destinationOf(join(dir, 'missing'))).toEqual({ kind: 'replace', target: join(dir, 'missing') });
    expect(await destinationOf(file)).toMatchObject({ kind: 'replace', existing: { mode: 0o640 } });
    expect((await destinationOf('/dev/null')).kind).toBe('in-place');
    await expect(destinationOf(dir)).rejects.toMatchObject({ code: 'EISDIR' });
    expect(existsSync(join(dir, 'missing'))).toBe(false);
  });
});

describe('terminalPieces: the bytes a terminal is given', () => {
  const shown = (text: string) => text.replaceAll('\u001b', '␛');

  it('a character split between two reads is decoded whole; the empty piece ends the text', () => {
    const bytes = Buffer.from('é\u001b[2J€', 'utf8');
    for (let cut = 0; cut <= bytes.length; cut++) {
      const pieces = terminalPieces(shown);
      const out = Buffer.concat([pieces(bytes.subarray(0, cut)), pieces(bytes.subarray(cut)), pieces(Buffer.alloc(0))]).toString('utf8');
      expect(out, `cut at ${cut}`).toBe('é␛[2J€');
    }
  });

  it('control: a truncated character at the end comes out as U+FFFD, not lost silently or held back', () => {
    const pieces = terminalPieces(shown);
    const euro = Buffer.from('€', 'utf8');
    expect(pieces(euro.subarray(0, 2)).toString('utf8')).toBe('');
    expect(pieces(Buffer.alloc(0)).toString('utf8')).toBe('\ufffd');
  });
});
