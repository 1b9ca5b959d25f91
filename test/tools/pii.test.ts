/**
 * Personal-data redaction (`src/tools/pii.ts`): the cheap test that rules a text out before the e-mail pattern
 * runs never rules out an address the pattern finds, nor the one before the card pattern a card number (the
 * patterns are copied here, so a change to either shows).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { luhnValid, piiRedactor } from '../../src/tools/pii.js';

const EMAIL = /(?<![\w.%+-])[\w.%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])/g;

const CARD = /(?<![\w-])(?:[2-6]\d{13,18}|[2-6]\d{3}([ -])\d{4}\1\d{4}\1\d{4}(?:\1\d{3})?|3[47]\d{2}([ -])\d{6}\2\d{5})(?![\w-])/g;

describe('piiRedactor', () => {
  it('redacts e-mail addresses and card numbers, and leaves what only looks like them', () => {
    const redact = piiRedactor(['email', 'card']);
    expect(redact('mail from alice.b+x@mail.example.org to ops@host.io: ok')).toBe('mail from <email> to <email>: ok');
    expect(redact('paid with 4111 1111 1111 1111 at 2024-02-29 18:00:00')).toBe('paid with <card> at 2024-02-29 18:00:00');
    expect(redact('QuorumCnxManager$SendWorker@688] user@host: a@b.c')).toBe('QuorumCnxManager$SendWorker@688] user@host: a@b.c');
  });

  it('finds every address the e-mail pattern finds (property)', () => {
    const redact = piiRedactor(['email']);
    const piece = fc.constantFrom('a', 'Z', '9', '.', '-', '_', '+', '%', '@', ' ', ':', ']', 'io', 'ex', '.com', 'user@', '@host');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 24 }), (pieces) => {
        const text = pieces.join('');
        expect(redact(text)).toBe(text.replace(EMAIL, '<email>'));
      }),
      { numRuns: 5000 },
    );
  });

  it('finds every card number the card pattern finds (property)', () => {
    const redact = piiRedactor(['card']);
    const piece = fc.constantFrom('0', '4', '9', '3', '7', ' ', '-', 'a', '_', ':', '4111', '1111', '1111 1111', '3782', '822463', '10005', '42424242');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 20 }), (pieces) => {
        const text = pieces.join('');
        expect(redact(text)).toBe(text.replace(CARD, (match) => (luhnValid(match) ? '<card>' : match)));
      }),
      { numRuns: 5000 },
    );
  });
});
