/**
 * How the template miner reads one token against another at the same position of a message: a run of
 * punctuation marks (layout), a word (values of which make variants), a name or file name (as variable as a
 * path), a key's value (`key=value`, whose key is the constant part), and the token shown once a position is
 * variable. Pure functions on masked tokens (see `masking.ts`); the miner decides with them, in `miner.ts`.
 */
import { WILDCARD, wildcardFor } from './masking.js';

/**
 * Whether a token is a run of two or more punctuation marks, brackets and quotes aside (`****`, `--`, `>>>>`):
 * layout, not a value, so a message with one where a family has a variable (`Fan speeds ( 3552 **** 3515 )`
 * against `( 3552 3534 3515 )`), or the other way round, is another event. `()` is not one: an empty value.
 */
export function isMark(token: string): boolean {
  if (token.length < 2) return false;
  for (let i = 0; i < token.length; i++) {
    const code = token.charCodeAt(i);
    if ((code >= 48 && code <= 57) || ((code | 32) >= 97 && (code | 32) <= 122) || code > 127) return false;
    if (BRACKETS_AND_QUOTES.includes(token[i] as string)) return false;
  }
  return true;
}

const BRACKETS_AND_QUOTES = `()[]{}<>"'`;

/** Whether a token has a constant part (a letter). */
export function hasLetter(token: string): boolean {
  for (let i = 0; i < token.length; i++) {
    const code = token.charCodeAt(i) | 32;
    if (code >= 97 && code <= 122) return true;
  }
  return false;
}

/**
 * Whether two different tokens at one position make variants rather than a variable: both have a letter, both
 * or neither are partly masked, two values of one key are such words themselves (`user=root` / `user=guest`,
 * while `name=android` / `name=com.android.phone` is a name), and partly masked ones differ in a word of two
 * letters or more (`ee<*>` / `alt<*>` are interfaces, while
 * `Thunderbird_A<*>` / `Thunderbird_B<*>` are ids `A8`, `B5` whose letter belongs to the number), or one is the
 * other with a word of letters alone added (`LOGIN(uid=<*>)` / `(uid=<*>)`, while `broadcast_<*>_piece<*>` /
 * `broadcast_<*>` adds a numbered part to a name).
 */
export function distinctWords(a: string, b: string): boolean {
  if (a === WILDCARD || b === WILDCARD || !hasLetter(a) || !hasLetter(b)) return false;
  // Dotted names (`com.apple.networkd`, `proxy.example.com`) name things, which vary like values.
  if (dotted(a) || dotted(b)) return false;
  // File names (`…-CCIOReporter-002.xml`, `…_Logs-003.txt`) name files, as variable as paths.
  if (isFileName(a) && isFileName(b)) return false;
  const masked = a.includes(WILDCARD);
  if (masked !== b.includes(WILDCARD)) return false;
  if (sameKey(a, b)) return distinctWords(a.slice(a.indexOf('=') + 1), b.slice(b.indexOf('=') + 1));
  if (!masked) return true;
  let prefix = 0;
  while (prefix < a.length && prefix < b.length && a[prefix] === b[prefix]) prefix++;
  let suffix = 0;
  while (suffix < a.length - prefix && suffix < b.length - prefix && a[a.length - 1 - suffix] === b[b.length - 1 - suffix]) suffix++;
  const onlyA = a.slice(prefix, a.length - suffix);
  const onlyB = b.slice(prefix, b.length - suffix);
  if (onlyA === '' || onlyB === '') {
    const added = onlyA + onlyB;
    return added.length >= 2 && letters(added) === added.length;
  }
  return letters(onlyA) >= 2 && letters(onlyB) >= 2;
}

/**
 * Whether a token is a file name with a variable part: `[<*>]-CCIOReporter-<*>.xml,` (an extension of two to six
 * letters or digits, starting with a letter, after the last dot; punctuation may follow). Read without a
 * regular expression, which would backtrack on a long token of many dots.
 */
function isFileName(token: string): boolean {
  let end = token.length;
  while (end > 0 && ',;:)]'.includes(token[end - 1] as string)) end--;
  const dot = token.lastIndexOf('.', end - 1);
  if (dot < 0 || end - dot - 1 < 2 || end - dot - 1 > 6) return false;
  for (let i = dot + 1; i < end; i++) {
    const code = token.charCodeAt(i) | 32;
    const letter = code >= 97 && code <= 122;
    if (!letter && !(i > dot + 1 && code >= 48 && code <= 57)) return false;
  }
  const wildcard = token.indexOf(WILDCARD);
  return wildcard >= 0 && wildcard < dot;
}

/** Whether a token has two dots between letters or digits: a host, package or bundle name. */
function dotted(token: string): boolean {
  let dots = 0;
  for (let i = 1; i < token.length - 1; i++) if (token.charCodeAt(i) === 46 && token.charCodeAt(i + 1) !== 46) dots++;
  return dots >= 2;
}

/**
 * The token shown for a position that is variable over `values`: the key they share with `<*>` as its value
 * (`tag=<*>,` for `tag="a",` and `tag="b",`), else `<*>` with the brackets they all leave unmatched (see
 * {@link wildcardFor}); punctuation after the value is kept when all values end in it.
 */
export function variableToken(values: readonly string[]): string {
  const first = values[0] as string;
  const equals = first.indexOf('=');
  if (equals > 0 && values.every((value) => sameKey(first, value))) {
    return first.slice(0, equals + 1) + variableToken(values.map((value) => value.slice(equals + 1)));
  }
  const shape = wildcardFor(first);
  if (!values.every((value) => wildcardFor(value) === shape)) return WILDCARD;
  let end = '';
  for (let n = 1; n <= first.length && ',;'.includes(first[first.length - n] as string); n++) {
    const tail = first.slice(first.length - n);
    if (values.every((value) => value.endsWith(tail))) end = tail;
  }
  return shape + end;
}

/** Whether two tokens are `key=value` with the same key. */
export function sameKey(a: string, b: string): boolean {
  const equals = a.indexOf('=');
  return equals > 0 && b.indexOf('=') === equals && a.startsWith(b.slice(0, equals));
}

function letters(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i) | 32;
    if (code >= 97 && code <= 122) count++;
  }
  return count;
}
