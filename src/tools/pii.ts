/**
 * Personal data in text a tool echoes (log examples and templates): e-mail addresses, payment card numbers and,
 * on request, IP addresses, each replaced by a placeholder (`<email>`, `<card>`, `<ip>`). Secrets are a separate
 * matter (`core/redaction.ts`), redacted always.
 *
 * A card number is 14 to 19 digits, contiguous or grouped as cards print them (4-4-4-4, 4-4-4-4-3, American
 * Express's 4-6-5, by spaces or dashes), standing alone (not part of a word, an id like `blk_…` or a longer
 * number), starting with 2–6 (the issuers' ranges) and passing the Luhn check; a 13-digit epoch in milliseconds
 * is not one, nor are the digit groups of a timestamp. Every pattern runs in time linear in the text: a run that
 * may fail is only read from where it starts (a lookbehind), never again from each of its positions.
 */

/** What can be redacted. */
export const PII_KINDS = ['email', 'card', 'ip'] as const;
export type PiiKind = (typeof PII_KINDS)[number];
/** Redacted unless the caller says otherwise: IP addresses are often what a log reader needs. */
export const DEFAULT_PII: readonly PiiKind[] = ['email', 'card'];

const EMAIL = /(?<![\w.%+-])[\w.%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])/g;
/** Contiguous, or in the groups cards are printed in: 4-4-4-4(-3) and American Express's 4-6-5. */
const CARD = /(?<![\w-])(?:[2-6]\d{13,18}|[2-6]\d{3}([ -])\d{4}\1\d{4}\1\d{4}(?:\1\d{3})?|3[47]\d{2}([ -])\d{6}\2\d{5})(?![\w-])/g;
/** What every match of {@link CARD} holds (see `MAY_HOLD.card`). */
const CARD_HINT = /\d\d\d\d[ -]?\d\d\d\d/;
const IPV4 = /(?<![\w.])(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}(?![\w.])/g;
/** Four colons or more, so that times (`10:30:00`) are not addresses. */
const IPV6 = /(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){4,7}[0-9A-Fa-f]{1,4}(?![\w:])/g;

/** Cheap tests that rule out most text before the patterns run: each holds for every text a pattern matches in. */
const MAY_HOLD: Record<PiiKind, (text: string) => boolean> = {
  email: mayHoldEmail,
  // Every alternative of the card pattern holds four digits and four more, with or without a space or dash between
  // (`4111111111111111`, `4111 1111`, `3782 822463`): most lines with four digits in a row (dates, ports) do not.
  // Written with `\d\d\d\d`, not `\d{4}`, which the engine searches about twice as fast.
  card: (text) => CARD_HINT.test(text),
  ip: (text) => text.includes('.') || text.includes(':'),
};

const isDigit = (code: number) => code >= 48 && code <= 57;
const isLetter = (code: number) => (code | 32) >= 97 && (code | 32) <= 122;

/**
 * Whether an `@` is followed by a domain with a dot and two letters after it (`@host.io`), what {@link EMAIL}
 * needs: most `@` in logs are not in an address (`Worker@688`, `user@host:`). One pass, no regular expression.
 */
function mayHoldEmail(text: string): boolean {
  for (let at = text.indexOf('@'); at >= 0; at = text.indexOf('@', at + 1)) {
    for (let i = at + 1; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code === 46) {
        if (isLetter(text.charCodeAt(i + 1)) && isLetter(text.charCodeAt(i + 2))) return true;
      } else if (!isDigit(code) && !isLetter(code) && code !== 45) break;
    }
  }
  return false;
}

/**
 * Whether a global pattern matches anywhere in `text`: a search without the replacement's machinery (a callback
 * per match), which most lines (four digits in a row, no card number) need only.
 */
function matches(pattern: RegExp, text: string): boolean {
  pattern.lastIndex = 0;
  const found = pattern.test(text);
  pattern.lastIndex = 0;
  return found;
}

/** Whether the digits of `candidate` (separators ignored) pass the Luhn check. */
export function luhnValid(candidate: string): boolean {
  let sum = 0;
  let double = false;
  let digits = 0;
  for (let i = candidate.length - 1; i >= 0; i--) {
    const code = candidate.charCodeAt(i);
    if (code < 48 || code > 57) continue;
    let digit = code - 48;
    if (double) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
    double = !double;
    digits++;
  }
  return digits >= 14 && digits <= 19 && sum % 10 === 0;
}

/**
 * A function that redacts the given kinds of personal data from a text.
 *
 * @param kinds - what to redact; an empty list returns the text unchanged.
 */
export function piiRedactor(kinds: readonly PiiKind[]): (text: string) => string {
  const email = kinds.includes('email');
  const card = kinds.includes('card');
  const ip = kinds.includes('ip');
  return (text) => {
    let result = text;
    if (email && MAY_HOLD.email(result)) result = result.replace(EMAIL, '<email>');
    if (card && MAY_HOLD.card(result) && matches(CARD, result)) result = result.replace(CARD, (match) => (luhnValid(match) ? '<card>' : match));
    if (ip && MAY_HOLD.ip(result)) result = result.replace(IPV4, '<ip>').replace(IPV6, '<ip>');
    return result;
  };
}
