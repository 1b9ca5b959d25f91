/**
 * Issue 9 §2: no log line can freeze the server. Every pattern on the tools' per-line path must run in time linear
 * in the line; a 119-byte line once took 82 s (a masking pattern backtracked exponentially), and a few others were
 * quadratic on long runs. Work is compared between a line and one 16 times longer, with a wide margin: linear work
 * grows about 16 times, quadratic work about 256 times, and the bound is 64.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { findSecrets, SecretRedactor } from '../../src/core/redaction.js';
import { FileLineParser } from '../../src/tools/analyze-logs/line.js';
import { TemplateMiner } from '../../src/tools/analyze-logs/miner.js';
import { impliedSeverity } from '../../src/tools/analyze-logs/severity.js';
import { piiRedactor } from '../../src/tools/pii.js';
import { FAMILIES, fill, REPORTED_LINE } from '../fixtures/pathological-lines.mjs';
import { growth } from '../helpers/growth.js';

const NOW = Date.UTC(2025, 5, 15, 12, 0, 0);
/** 100 kB: longer than the tools' 16,384-character line cap, so the patterns are checked beyond it too. */
const LARGE = 100_000;
const SMALL = LARGE / 16;
/** Linear work grows 16 times from SMALL to LARGE, quadratic 256 times. */
const MAX_RATIO = 64;

const redactPii = piiRedactor(['email', 'card', 'ip']);

/**
 * The per-line work of analyze_logs (secret and personal-data redaction, header detection on the line as a
 * sample, header, timestamp, year hints and severity, masking and mining, implied severity) and of
 * audit_repository.
 */
function perLine(line: string): void {
  const clean = redactPii(new SecretRedactor().redact(line));
  const parsed = new FileLineParser([clean], { referenceMs: NOW }).parse(clean);
  impliedSeverity(new TemplateMiner().add(parsed.message, clean).tokens.join(' '));
  findSecrets(line);
}

/** Pieces that the patterns treat specially: separators, digits and hex, masked parts, keywords of the secret rules. */
const ATOMS = [
  '0',
  '7',
  '28',
  '255',
  'a',
  'f',
  'x',
  'g',
  'Z',
  'é',
  '_',
  '-',
  '.',
  ':',
  '/',
  '\\',
  '=',
  ',',
  ';',
  '@',
  '!',
  '"',
  "'",
  '[',
  ']',
  '<',
  '>',
  '(',
  ')',
  '{',
  '}',
  '%',
  '$',
  '+',
  '*',
  '<*>',
  ' ',
  '  ',
  '\t',
  'eyJ',
  '://',
  'key=',
  'token ',
  'secret_access_key ',
  'password=',
  'pwd ',
  'Basic ',
  'Bearer ',
  '-----BEGIN ',
  'A ',
  'PRIVATE KEY',
  '-----END ',
  'ghp_',
  'github_pat_',
  'xoxb-',
  'sk_live_',
  'AKIA',
  'AIza',
  'npm_',
  '0x',
  'level=',
  'ERROR',
  'E/',
  'Jun  4 ',
  '2024-01-02T03:04:05Z ',
  '10.0.0.',
  'deadbeef',
  '-1',
  'Ojo6',
  // Personal data, headers and severity words: e-mail parts, card digits, IPv6 groups, fields, levels.
  'a@b.co',
  '@',
  'x.',
  '4111 ',
  '4111-',
  '::',
  'ab:',
  '|',
  '[x]',
  '"',
  ' - ',
  'INFO ',
  'panic',
  'error ',
  '5xx',
  'Caused by: ',
  '\tat ',
  'Feb 29 ',
  // Keywords of the secret rules added with the labelled corpus.
  'machine ',
  'login ',
  ' password ',
  '&sig=',
  '%2B',
  '"auth":"',
  'glpat-',
  'hooks.slack.com/services/T',
  '/B',
  'AccountKey=',
  'secret_key ',
  'PAT=',
  'redis://:',
];
/** What may precede a long run: a timestamp or level, or a keyword that makes a rule scan what follows. */
const HEADS = [
  '',
  '2015-10-18 18:01:47 INFO ',
  '<13>Jun  4 15:16:01 host app[42]: ',
  'E0102 15:04:05.000000 1 ',
  '[error] ',
  '- 1117838570 2005.06.03 R02 2005-06-03-15.42.50.675872 R02 RAS KERNEL INFO ',
  '10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET ',
  'mail ',
  '4111',
  'key ',
  'token ',
  'Authorization: Basic ',
  'password',
  'pwd=',
  '-----BEGIN ',
  'see http',
  'id=',
];
const ENDS = ['', 'x', 'g', '!', ':', '@', '=', '\u0001'];

const atom = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...ATOMS) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 3 }) },
  { weight: 2, arbitrary: fc.string({ unit: fc.constantFrom(...'0123456789abcdefx_'), minLength: 1, maxLength: 6 }) },
);
/**
 * A line shape: a head, a unit repeated to any length, an end (the character that makes a greedy match fail).
 * Short units (one or two atoms) make the long runs of one or two kinds of character that scanning patterns choke
 * on; longer ones make separator chains and mixed tokens.
 */
const shapes = fc.record({
  head: fc.constantFrom(...HEADS),
  unit: fc.oneof(fc.array(atom, { minLength: 1, maxLength: 2 }), fc.array(atom, { minLength: 3, maxLength: 6 })).map((parts) => parts.join('')),
  end: fc.constantFrom(...ENDS),
});
type Shape = { head: string; unit: string; end: string };
const lineOf = (shape: Shape, size: number): string => shape.head + fill(shape.unit, size) + shape.end;

function expectLinear(small: string, large: string): void {
  const measured = growth(perLine, small, large, MAX_RATIO);
  expect(
    measured.ratio,
    `${measured.smallMs.toFixed(3)} ms → ${measured.largeMs.toFixed(3)} ms for ${JSON.stringify(large.slice(0, 60))}…`,
  ).toBeLessThanOrEqual(MAX_RATIO);
}

describe('pathological log lines (issue 9 §2)', () => {
  it('the reported 119-byte line of 29 masked parts takes milliseconds, not 82 s', () => {
    expect(Buffer.byteLength(REPORTED_LINE)).toBe(119);
    const start = performance.now();
    perLine(REPORTED_LINE);
    // Generous: it takes microseconds; each extra part doubled the time of the old pattern.
    expect(performance.now() - start).toBeLessThan(1000);
  });

  it.each(Object.keys(FAMILIES))('work grows linearly with the line: %s', (name) => {
    const make = FAMILIES[name] as (size: number) => string;
    expectLinear(make(SMALL), make(LARGE));
  });

  it('work grows linearly on generated lines: separator chains, masked parts, punctuation runs, 100 kB lines (fast-check)', () => {
    fc.assert(
      fc.property(shapes, (shape) => expectLinear(lineOf(shape, SMALL), lineOf(shape, LARGE))),
      { numRuns: 40 },
    );
  }, 120_000);

  it('negative control: the same measurement flags a quadratic pattern (the old URL-scheme rule on a run of letters)', () => {
    const quadratic = /[a-zA-Z][a-zA-Z0-9+.-]*:\/\//g;
    const run = (line: string) => {
      quadratic.lastIndex = 0;
      quadratic.test(line);
    };
    // Smaller sizes than above (the quadratic work at 100 kB would take seconds per run), the same ratio.
    const measured = growth(run, 'a'.repeat(500), 'a'.repeat(8000), MAX_RATIO);
    expect(measured.ratio).toBeGreaterThan(MAX_RATIO);
  });
});
