/**
 * Tokenising and variable masking for the template miner: turns a log message into tokens in which the parts
 * that obviously vary from one occurrence to the next (numbers, addresses, ids, hashes, paths) are replaced by
 * the wildcard `<*>`. Masking happens before matching so that the parse tree routes and compares on the
 * constant words of a message, which is what makes a fixed-depth tree work on real logs (Drain's "domain
 * knowledge" preprocessing step, kept generic instead of per-system).
 */

/** The placeholder for a variable part of a template. */
export const WILDCARD = '<*>';

/**
 * Whole-token patterns. A token matching one of them is a variable as a whole.
 * - Paths (`/var/log/x.log`, `C:\Windows\x.dll`, `./a/b`) name files or URLs that differ per line.
 * - Key/value tokens are handled below by masking only the value.
 */
const WHOLE_TOKEN_PATTERNS: readonly RegExp[] = [
  // Unix-like absolute or relative paths and URLs with at least one separator after the first character.
  /^[[(<"'{]*(?:[a-zA-Z][a-zA-Z0-9+.-]*:\/\/|\.{0,2}\/)[^\s]*$/,
  // Windows paths.
  /^[[(<"']*[a-zA-Z]:\\[^\s]*$/,
];

/**
 * Parts of a token that are variable; replaced by the wildcard inside the token so that `blk_-123`,
 * `sshd[4242]:` and `uid=0` keep their constant part (`blk_<*>`, `sshd[<*>]:`, `uid=<*>`).
 * Order matters: the alternatives are tried left to right at each position.
 */
const VARIABLE_PART = new RegExp(
  [
    // IPv4 address, optionally with a port.
    String.raw`\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?`,
    // UUID.
    String.raw`[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}`,
    // Hexadecimal literal.
    String.raw`0[xX][0-9a-fA-F]+`,
    // MAC address or IPv6-ish groups.
    String.raw`[0-9a-fA-F]{1,4}(?::[0-9a-fA-F]{0,4}){2,7}`,
    // Hex ids and hashes: a whole run of letters and digits made of 6+ hex characters with at least one digit
    // (so that `1234567kB` is a number with a unit rather than a hex id and a digit). Starting only where a run
    // starts keeps the scan linear: the run is read once, not again from each of its positions.
    String.raw`(?<![0-9a-zA-Z])(?=[a-fA-F]*\d)[0-9a-fA-F]{6,}(?![0-9a-zA-Z])`,
    // Numbers: optional sign when it cannot be a word hyphen, decimals, thousands separators.
    String.raw`(?<![a-zA-Z0-9])-?\d+(?:[.,]\d+)*|\d+(?:[.,]\d+)*`,
  ].join('|'),
  'g',
);

/**
 * A token that, once its variable parts are masked, has no letters or digits left (`sshd<*>` does not qualify).
 * `<*>` is itself made of such characters, so it needs no alternative of its own: `(?:<\*>|[^\p{L}\p{N}])*`, the
 * earlier form, matched `<*>` in two ways and backtracked exponentially on `<*>_<*>_…_x` (82 s for 29 parts).
 */
const NOTHING_CONSTANT = /^[^\p{L}\p{N}]*$/u;
/** Whitespace-separated parts a quoted value of a key may span (`key="a b c"`); a longer one is left as words. */
const MAX_QUOTED_PARTS = 8;
const ADJACENT_WILDCARDS = /(?:<\*>){2,}/g;
/**
 * Results for tokens mixing letters and digits (`host-03`, `ssh2`, `[exec-7]`), the only ones that need the
 * costly pattern: they repeat often, so a small cache saves most of the work. It is direct-mapped: a token's slot
 * is a hash of its characters (see {@link mixedSlot}), and a new token replaces the one in its slot. The tokeniser
 * finds a token there from the message's characters, without slicing its string or hashing it again for a `Map`.
 */
const MIXED_CACHE_SIZE = 8192;
const mixedKeys: string[] = new Array<string>(MIXED_CACHE_SIZE).fill('');
const mixedValues: string[] = new Array<string>(MIXED_CACHE_SIZE).fill('');
/** Longer tokens are not cached, which bounds the cache's memory (8192 × 64 characters). */
const MIXED_CACHE_TOKEN_LENGTH = 64;

/**
 * Month and weekday names: parts of a date written inside a message (`at Fri Jul  1 07:57:30 2005`), as variable
 * as its digits.
 */
const OCTAL_ESCAPE = /\\0[0-7]{2}/g;
/** A unit of size after a number (`5.2 KB`, `93.0 B`): part of the quantity, whose unit varies with it. */
const SIZE_UNIT = /^(?:[KMGTPE]i?B|[kK]B|B)[,;)\]]*$/;
/** A unit of time after a number (`<1 sec`, `0.6 secs.`, `439 seconds.`); see {@link isUnitAfter}. */
const TIME_UNIT = /^(?:[mµun]?s|secs?|seconds?|mins?|minutes?|hours?)[.,;)\]]*$/;

const CALENDAR_WORDS = new Set('Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec Mon Tue Wed Thu Fri Sat Sun'.split(' '));

/**
 * Masks the variable parts of one whitespace-free token.
 *
 * @returns `<*>` when the token is a variable as a whole (a path or URL, or nothing but numbers and
 *   punctuation), else the token with its variable parts replaced by `<*>` (unchanged when nothing varies).
 */
function maskToken(raw: string): string {
  // syslog-ng and others write quotes as octal escapes (`\042alt0\042`): read them as the quotes they are.
  const token = raw.includes('\\0') ? raw.replace(OCTAL_ESCAPE, '"') : raw;
  let flags = 0;
  for (let i = 0; i < token.length; i++) flags = withCharacter(flags, token.charCodeAt(i));
  return maskClassified(token, flags);
}

/*
 * What the characters of a token are, as bits (see {@link withCharacter}): one pass over them decides which
 * patterns can apply at all. Most tokens are plain words, and most of the others are numbers, times or addresses
 * without a letter, which need no pattern either.
 */
const DIGITS = 1;
/** ASCII letters and any character above 127. */
const LETTERS = 2;
/** `/` or `\`. */
const SEPARATORS = 4;
const SLASH = 8;
/** `()[]{}"'`. */
const BRACKET = 16;
const ONE_DOT = 32;
/** `ONE_DOT << 1`: the tokeniser sets it from a second dot by that shift. */
const TWO_DOTS = 64;
const DOUBLE_QUOTE = 128;
const BACKSLASH = 256;

/** Not a token character: ends a token (an ASCII code's entry in {@link ASCII_CLASSES}). */
const WHITESPACE = 512;

/** Whether a character code is a capital letter `A`–`Z`. */
const isCapital = (code: number) => code >= 65 && code <= 90;

/** `flags` with the character `code` added. */
function withCharacter(flags: number, code: number): number {
  if (code >= 48 && code <= 57) return flags | DIGITS;
  if (((code | 32) >= 97 && (code | 32) <= 122) || code > 127) return flags | LETTERS;
  if (code === 47) return flags | SEPARATORS | SLASH;
  if (code === 92) return flags | SEPARATORS | BACKSLASH;
  if (code === 46) return flags | ((flags & ONE_DOT) !== 0 ? TWO_DOTS : ONE_DOT);
  if (code === 34) return flags | BRACKET | DOUBLE_QUOTE;
  if (code === 40 || code === 41 || code === 91 || code === 93 || code === 123 || code === 125 || code === 39) return flags | BRACKET;
  return flags;
}

/** {@link maskToken} of a token whose characters are `flags` (octal escapes already read). */
function maskClassified(token: string, flags: number): string {
  const digits = (flags & DIGITS) !== 0;
  const letters = (flags & LETTERS) !== 0;
  const separators = (flags & SEPARATORS) !== 0;
  const slash = (flags & SLASH) !== 0;
  const brackets = (flags & BRACKET) !== 0;
  const dots = (flags & TWO_DOTS) !== 0 ? 2 : (flags & ONE_DOT) !== 0 ? 1 : 0;
  // A token that is a variable as a whole keeps the brackets it opens or closes for the rest of the line, and its
  // quotes.
  // A path keeps the punctuation after it too (`/var/log/x.log:`), as it did before brackets were kept.
  if (separators && isWholeVariable(token)) return (brackets ? wildcardFor(token) : WILDCARD) + trailingPunctuation(token);
  // `com.example.app/.ui.MainActivity`, `org.a.b/org.a.b.C`: a component name, as variable as a path.
  if (slash && dots >= 2 && letters) return brackets ? wildcardFor(token) : WILDCARD;
  // Month and weekday names start with a capital: other three-letter words are not looked up.
  if (!digits) return token.length === 3 && isCapital(token.charCodeAt(0)) && CALENDAR_WORDS.has(token) ? WILDCARD : token;
  if (!letters) return brackets ? wildcardFor(token) : WILDCARD;
  return maskMixed(token, brackets, token.length <= MIXED_CACHE_TOKEN_LENGTH ? mixedSlot(token, 0, token.length) : -1);
}

/**
 * Whether a token matches one of {@link WHOLE_TOKEN_PATTERNS}. A loop, not `some` with an arrow function: that
 * function captures the token, so {@link maskClassified} would allocate a context for it on every call, whatever
 * the token (about 55 bytes a token, 40 % of what the tokeniser allocated).
 */
function isWholeVariable(token: string): boolean {
  for (const pattern of WHOLE_TOKEN_PATTERNS) if (pattern.test(token)) return true;
  return false;
}

/**
 * {@link maskToken} of a token with letters and digits that is not a path, through the cache: `slot` is its
 * {@link mixedSlot}, or -1 for a token too long to be cached.
 */
function maskMixed(token: string, brackets: boolean, slot: number): string {
  // An HTTP status class (`5xx`, as access-log templates carry it) is a constant.
  if (token.length === 3 && token[1] === 'x' && token[2] === 'x') return token;
  if (slot >= 0 && mixedKeys[slot] === token) return mixedValues[slot] as string;
  const masked = token.replace(VARIABLE_PART, WILDCARD).replace(ADJACENT_WILDCARDS, WILDCARD);
  const result = masked === token || !NOTHING_CONSTANT.test(masked) ? masked : brackets ? wildcardFor(token) : WILDCARD;
  if (slot >= 0) {
    mixedKeys[slot] = token;
    mixedValues[slot] = result;
  }
  return result;
}

/** The cache slot of the token `text[start, end)` (FNV-1a of its character codes). */
function mixedSlot(text: string, start: number, end: number): number {
  let hash = 0x811c9dc5;
  for (let i = start; i < end; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return (hash ^ (hash >>> 16)) & (MIXED_CACHE_SIZE - 1);
}

/** What a variable as a whole may show around `<*>` (see {@link wildcardFor}). */
const BRACKETS = `()[]{}"'`;

/**
 * `<*>` for a token that is a variable as a whole, with the brackets it leaves unmatched kept where they were:
 * `232]` is `<*>]`, `(0.39` is `(<*>`, `Surface(name=a/b` is `<*>(`, while `(uid=0)` and `[/var/www]` are `<*>`.
 * Dropping them would make the template of a balanced line unbalanced (`Process x (pid <*> has died`, issue 26).
 * Unmatched brackets before the token's first other character go before the wildcard, the others after it; quotes
 * around the value are kept (`"/usr/share/index.html"` is `"<*>"`).
 */
export function wildcardFor(token: string): string {
  // One pass over the character codes decides the common cases without allocating: no bracket, or one pair
  // around the whole token (`[467587.551743]`).
  let brackets = 0;
  let quotes = 0;
  for (let i = 0; i < token.length; i++) {
    const code = token.charCodeAt(i);
    if (bracketIndex(code) >= 0) brackets++;
    else if (code === 34 || code === 39) quotes++;
  }
  const quote = quotes >= 2 ? quoteOf(token) : '';
  const middle = quote === '' ? WILDCARD : `${quote}${WILDCARD}${quote}`;
  if (brackets === 0) return middle;
  const first = bracketIndex(token.charCodeAt(0));
  if (brackets === 2 && first >= 0 && first < 3 && first + 3 === bracketIndex(token.charCodeAt(token.length - 1))) return middle;
  const open: number[] = [];
  const unmatched: number[] = [];
  let content = -1;
  for (let i = 0; i < token.length; i++) {
    const kind = bracketIndex(token.charCodeAt(i));
    if (kind < 0) {
      if (content < 0) content = i;
    } else if (kind < 3) open.push(i);
    else {
      const last = open.at(-1);
      if (last !== undefined && bracketIndex(token.charCodeAt(last)) === kind - 3) open.pop();
      else unmatched.push(i);
    }
  }
  if (open.length === 0 && unmatched.length === 0) return middle;
  let lead = '';
  let trail = '';
  // Both lists are in increasing order: merged, not sorted, so that a token of many brackets costs linear time.
  for (let u = 0, o = 0; u < unmatched.length || o < open.length;) {
    const i = o >= open.length || (u < unmatched.length && (unmatched[u] as number) < (open[o] as number)) ? (unmatched[u++] as number) : (open[o++] as number);
    if (content < 0 || i < content) lead += token[i] as string;
    else trail += token[i] as string;
  }
  return `${lead}${middle}${trail}`;
}

/**
 * The quote around a token's content (`"…"`, `'…'`), brackets and trailing punctuation aside (`("/a/b"),`), or
 * `''`: a quoted value stays quoted in the template (`upstream: "<*>"`).
 */
function quoteOf(token: string): string {
  let start = 0;
  while (start < token.length && bracketIndex(token.charCodeAt(start)) >= 0) start++;
  let end = token.length;
  while (end > start && (bracketIndex(token.charCodeAt(end - 1)) >= 0 || ',;:'.includes(token[end - 1] as string))) end--;
  const quote = token[start];
  return end - start >= 2 && (quote === '"' || quote === "'") && token[end - 1] === quote ? quote : '';
}

/** The run of `,`, `;` and `:` that ends a token (`''` when there is none). */
function trailingPunctuation(token: string): string {
  let end = token.length;
  while (end > 0 && ',;:'.includes(token[end - 1] as string)) end--;
  return token.slice(end);
}

/** 0, 1, 2 for `(`, `[`, `{`; 3, 4, 5 for `)`, `]`, `}`; -1 for any other character code. */
function bracketIndex(code: number): number {
  switch (code) {
    case 40:
      return 0;
    case 91:
      return 1;
    case 123:
      return 2;
    case 41:
      return 3;
    case 93:
      return 4;
    case 125:
      return 5;
    default:
      return -1;
  }
}

/**
 * Whether a masked token is a variable as a whole: `<*>`, or `<*>` with the brackets {@link wildcardFor} kept.
 * The miner compares such tokens as it compares `<*>`.
 */
export function isVariable(token: string): boolean {
  if (token === WILDCARD) return true;
  const at = token.indexOf(WILDCARD);
  if (at < 0) return false;
  for (let i = 0; i < token.length; i++) {
    if (i === at) i += WILDCARD.length - 1;
    else if (!BRACKETS.includes(token[i] as string)) return false;
  }
  return true;
}

/**
 * Whether a masked token is a unit of time after a variable (`<*> sec`): it stays in the template, as the
 * unit a reader expects, but the miner may align a message with it against one without it (`lifetime 00:01` /
 * `lifetime <1 sec`).
 */
export function isUnitAfter(previous: string | undefined, token: string): boolean {
  return previous !== undefined && token.length <= 8 && isVariable(previous) && TIME_UNIT.test(token);
}

/**
 * Splits a message on whitespace and masks each token: a token that is a path or URL, or nothing but numbers
 * and punctuation, becomes `<*>`; in other tokens numbers, addresses, hex ids and UUIDs become `<*>`.
 *
 * @param maxTokens - tokens beyond this count are dropped, which bounds the cost of a pathological line.
 * @returns the masked tokens; empty for a blank message.
 */
export function maskedTokens(message: string, maxTokens: number): string[] {
  const tokens: string[] = [];
  maskInto(message, maxTokens, tokens);
  return tokens;
}

/**
 * {@link maskedTokens} written into `tokens` from index 0 (what is there beyond the count is left as it was), so
 * that the miner can reuse one array.
 *
 * @returns the number of tokens.
 */
export function maskInto(message: string, maxTokens: number, tokens: string[]): number {
  let count = 0;
  const length = message.length;
  // One pass finds the tokens (split on whitespace as `\s+` does) and what their characters are.
  let i = 0;
  while (i < length) {
    if (isWhitespace(message.charCodeAt(i))) {
      i++;
      continue;
    }
    const start = i;
    let flags = 0;
    for (; i < length; i++) {
      const code = message.charCodeAt(i);
      if (code < 128) {
        // ASCII from the table: one load instead of the comparisons of `withCharacter`.
        const bits = ASCII_CLASSES[code] as number;
        if (bits === WHITESPACE) break;
        // A second dot adds TWO_DOTS (the bit above ONE_DOT), without a branch.
        flags |= bits | ((flags & bits & ONE_DOT) << 1);
      } else {
        if (isWhitespace(code)) break;
        flags = withCharacter(flags, code);
      }
    }
    // Digits and punctuation without a letter, a bracket or a path separator (`12:30:01`, `10.0.0.1:80`, `-42,`):
    // `<*>` as maskClassified makes it, without the token's string (a third of a message's tokens, typically).
    if ((flags & (DIGITS | LETTERS | SEPARATORS | BRACKET)) === DIGITS) {
      tokens[count++] = WILDCARD;
      if (count >= maxTokens) break;
      continue;
    }
    // Letters and digits, no path separator nor quote (`ssh2`, `blk_-42`, `[exec-7]`): the masking cache's,
    // looked up from the message's characters (a token that is not there is masked as below, and stored).
    if ((flags & (DIGITS | LETTERS | SEPARATORS | DOUBLE_QUOTE)) === (DIGITS | LETTERS) && i - start <= MIXED_CACHE_TOKEN_LENGTH) {
      const slot = mixedSlot(message, start, i);
      const key = mixedKeys[slot] as string;
      tokens[count++] =
        key.length === i - start && message.startsWith(key, start)
          ? (mixedValues[slot] as string)
          : maskMixed(message.slice(start, i), (flags & BRACKET) !== 0, slot);
      if (count >= maxTokens) break;
      continue;
    }
    let raw = message.slice(start, i);
    // `tag="View Lock",`: a quoted value of a key is one token, so that a space in it does not change the
    // message's length (its template is the one of `tag="AudioMix",`).
    if ((flags & DOUBLE_QUOTE) !== 0 && raw.length > 2) {
      const quote = raw.indexOf('="');
      const joined = quote > 0 && raw.indexOf('"', quote + 2) < 0 ? quotedValue(message, raw, i) : null;
      if (joined) {
        raw = joined.text;
        i = joined.end;
        flags = -1;
      }
    }
    const previous = count > 0 ? tokens[count - 1] : undefined;
    // Every size unit has a `B`: the cheap test first, as most short tokens are not units.
    const unit = previous !== undefined && raw.length <= 5 && raw.includes('B') && isVariable(previous) && SIZE_UNIT.test(raw);
    tokens[count++] = unit ? wildcardFor(raw) : flags < 0 || (flags & BACKSLASH) !== 0 ? maskToken(raw) : maskClassified(raw, flags);
    if (count >= maxTokens) break;
  }
  return count;
}

/**
 * The quoted value that `first` (`tag="View`) opens, joined with the tokens up to the one holding the closing
 * quote (`Lock",`) by single spaces, and where that token ends; `null` when none of the next
 * {@link MAX_QUOTED_PARTS} tokens holds a quote.
 */
function quotedValue(message: string, first: string, from: number): { text: string; end: number } | null {
  const parts = [first];
  let i = from;
  while (parts.length <= MAX_QUOTED_PARTS) {
    while (i < message.length && isWhitespace(message.charCodeAt(i))) i++;
    if (i >= message.length) return null;
    const start = i;
    while (i < message.length && !isWhitespace(message.charCodeAt(i))) i++;
    const part = message.slice(start, i);
    parts.push(part);
    if (part.includes('"')) return { text: parts.join(' '), end: i };
  }
  return null;
}

/** Whether a character code is whitespace as `\s` reads it (ASCII and Unicode spaces, line breaks, BOM). */
function isWhitespace(code: number): boolean {
  if (code === 32 || (code >= 9 && code <= 13)) return true;
  if (code < 160) return false;
  return (
    code === 160 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

/**
 * What each ASCII character adds to a token's flags (see {@link withCharacter}), or {@link WHITESPACE}: a dot is
 * {@link ONE_DOT} here and counted as `withCharacter` counts it.
 */
const ASCII_CLASSES = Uint16Array.from({ length: 128 }, (_, code) => (isWhitespace(code) ? WHITESPACE : withCharacter(0, code)));
