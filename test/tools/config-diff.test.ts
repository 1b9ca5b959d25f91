/**
 * Issue 26 item 14: the configuration diff of `check_infrastructure` never hides a changed secret. A line whose
 * redacted value changed shows as changed ("value changed, redacted"), also when other lines change in the same
 * run; the diff has exactly the changed lines of a plain line diff of the unredacted texts; no secret appears.
 */
import { createTwoFilesPatch } from 'diff';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { compareFile, fileStateOf, type KeptFile, keptFile, newSnapshotSalt } from '../../src/tools/check-infrastructure/files.js';

const state = (text: string, salt: string) => fileStateOf(Buffer.from(text), Buffer.byteLength(text), salt);

/** The `+`/`-` lines of a unified diff (not the file headers). */
function changedLines(diff: string | null): string[] {
  return (diff ?? '').split('\n').filter((line) => /^[+-]/.test(line) && !/^(\+\+\+|---) /.test(line));
}

describe('check_infrastructure config diff: a changed secret is never shown as unchanged (issue 26 item 14)', () => {
  const before = 'port: 8080\ndb:\n  password: Tr0ub4dor-and-3-horses\n  pool: 10\n';
  const after = 'port: 9090\ndb:\n  password: correct-horse-battery-9\n  pool: 10\n';

  it('a secret that changed beside another change shows as a changed line, without its value', () => {
    const salt = newSnapshotSalt();
    const change = compareFile(keptFile(state(before, salt)), state(after, salt), 'app.yaml');
    expect(changedLines(change.diff)).toEqual(['-port: 8080', '+port: 9090', '-  password: <redacted>', '+  password: <redacted>   (value changed, redacted)']);
    expect(change.diff).not.toMatch(/Tr0ub4dor|horse|battery/);
  });

  it('negative control: a snapshot without line tags (written before them) compares as before and shows the secret line as context', () => {
    const salt = newSnapshotSalt();
    const legacy: KeptFile = { ...keptFile(state(before, salt)) };
    delete legacy.salt;
    delete legacy.lineTags;
    const change = compareFile(legacy, state(after, newSnapshotSalt()), 'app.yaml');
    expect(changedLines(change.diff)).toEqual(['-port: 8080', '+port: 9090']);
    expect(change.diff).toContain('   password: <redacted>');
  });

  it('only a secret changed: a changed line too, not "no visible difference"', () => {
    const salt = newSnapshotSalt();
    const onlySecret = before.replace('Tr0ub4dor-and-3-horses', 'another-Secret-value-77');
    const change = compareFile(keptFile(state(before, salt)), state(onlySecret, salt), 'app.yaml');
    expect(change.changed).toBe(true);
    expect(changedLines(change.diff)).toEqual(['-  password: <redacted>', '+  password: <redacted>   (value changed, redacted)']);
  });

  it('property: the changed lines are those of a plain line diff of the unredacted texts, and no secret shows', () => {
    const secret = fc.stringMatching(/^[A-Za-z0-9]{6,14}-[A-Za-z0-9]{6,14}$/);
    const line = fc.oneof(
      fc.integer({ min: 1, max: 5 }).map((n) => `port: 80${n}`),
      fc.constantFrom('name: api', 'name: worker', 'pool: 10', 'pool: 20', '', 'db:'),
      secret.map((value) => `  password: ${value}`),
      secret.map((value) => `api_key = "${value}"`),
    );
    const file = fc.array(line, { minLength: 1, maxLength: 12 });
    fc.assert(
      fc.property(file, file, (a, b) => {
        const [beforeText, afterText] = [a.join('\n'), b.join('\n')];
        const salt = newSnapshotSalt();
        const change = compareFile(keptFile(state(beforeText, salt)), state(afterText, salt), 'f');
        const plain = createTwoFilesPatch('f (last run)', 'f (now)', beforeText, afterText, '', '', { context: 2 });
        const expected = changedLines(beforeText === afterText ? '' : plain);
        const shown = changedLines(change.diff);
        // Same number of removed and added lines at the same places: the signs line up one to one.
        expect(shown.map((l) => l[0])).toEqual(expected.map((l) => l[0]));
        // A line kept verbatim is shown verbatim; a line with a secret is shown redacted.
        for (const [i, l] of shown.entries()) {
          if (!/<redacted>/.test(l)) expect(l).toBe(expected[i]);
        }
        const secrets = [...a, ...b].flatMap((l) => l.match(/[A-Za-z0-9]{6,14}-[A-Za-z0-9]{6,14}/g) ?? []);
        for (const value of secrets) expect(change.diff ?? '').not.toContain(value);
      }),
      { numRuns: 300 },
    );
  });
});
