/**
 * The rule for model-facing short text (issue 23 §3): what a server may put in a `statusMessage`, a 2025-11-25
 * immediate response (`_meta["io.modelcontextprotocol/model-immediate-response"]`, R15) or an error `message` built
 * from tool text — the places where a host hands server-made text to the model. Defined here, in the protocol
 * layer, because both sides apply it: the server makes its text fit (`sanitizeModelText` in `core/tool-outcome.ts`
 * adds secret redaction to {@link toModelLine}) and `mcp-tasks verify` judges any server by
 * {@link modelTextProblems}. The rule, in `docs/security/model-facing-text.md`:
 *
 * 1. one line of visible text: characters of the Unicode categories Cc (controls: newlines, tabs, ESC…), Zl, Zp
 *    (U+2028, U+2029) and Cs (lone surrogates) become a space; Cf (format: bidi embeddings, overrides and isolates
 *    U+202A–U+202E / U+2066–U+2069, zero-width characters, tag characters U+E0000–U+E007F, soft hyphen…) and the
 *    other default-ignorable code points (variation selectors, Hangul fillers) are removed; ANSI escape sequences
 *    are removed whole; runs of white space become one space; the ends are trimmed;
 * 2. compatibility forms folded (NFKC), so `ＳＹＳＴＥＭ：` or `𝐒𝐘𝐒𝐓𝐄𝐌:` is the `SYSTEM:` a model reads it as;
 * 3. role markers neutralised anywhere in the line, so no part of it reads as a turn of its own (see
 *    {@link ROLE_MARKER}), also when spelt with Cyrillic or Greek look-alikes of Latin letters (`ЅYЅТЕМ:`, see
 *    {@link LATIN_LOOK_ALIKES}) — those are matched, not folded: Cyrillic and Greek text stays as it is;
 * 4. at most {@link MODEL_TEXT_MAX_CHARS} UTF-16 code units, cut at a code point and ended with `...`.
 */

/** Most UTF-16 code units of model-facing text; longer text is cut and ends with {@link TRUNCATION_MARK}. */
export const MODEL_TEXT_MAX_CHARS = 512;

/** What ends cut text: ASCII, so that a second pass (NFKC folds `…` to `...`) leaves it as it is. */
const TRUNCATION_MARK = '...';

/**
 * Input beyond this many code units is not looked at: the output holds at most {@link MODEL_TEXT_MAX_CHARS}, and
 * the folding steps stay linear in a bounded input whatever a tool passes (a status of megabytes).
 */
const MAX_INPUT_CHARS = 16 * MODEL_TEXT_MAX_CHARS;

/**
 * ANSI escape sequences, removed whole, not left as `[31m` or `52;c;…`: operating system commands ended by BEL or
 * ST (`ESC ] 52;c;… BEL` writes a terminal's clipboard, `ESC ] 8;;url BEL` makes a disguised link), CSI (also as the
 * C1 control U+009B) and two-character escapes.
 */
// eslint-disable-next-line no-control-regex -- finding escape sequences is the point
const ANSI_ESCAPE = /\u001b\][^\u0007\u001b\u009c]*(?:\u0007|\u001b\\|\u009c)|\u001b(?:\[[0-?]*[ -/]*[@-~]|[@-Z\\-_])|\u009b[0-?]*[ -/]*[@-~]/g;
/** Characters that break the line or lie about its order: become a space. */
const LINE_BREAKING = /[\p{Cc}\p{Zl}\p{Zp}\p{Cs}]/gu;
/** Characters a reader does not see (format characters and the other default-ignorables): removed. */
const INVISIBLE = /[\p{Cf}\p{Default_Ignorable_Code_Point}]/gu;
/** Every character rule 1 forbids, for {@link modelTextProblems}. */
const FORBIDDEN = /[\p{Cc}\p{Zl}\p{Zp}\p{Cs}\p{Cf}\p{Default_Ignorable_Code_Point}]/u;

/** Role words that open a turn in chat transcripts and templates (matched case-insensitively). */
const ROLE_WORDS = ['system', 'developer', 'assistant', 'user', 'human', 'ai', 'model', 'tool', 'function', 'bot'];
/** Bracketed instruction markers of chat templates (`[INST]`, `[/INST]`, `[TOOL_RESULTS]`…), case-insensitively. */
const BRACKET_WORDS = ['INST', 'SYS', 'SYSTEM', 'USER', 'ASSISTANT', 'HUMAN', 'AI', 'DEVELOPER', 'TOOL', 'TOOL_CALLS', 'TOOL_RESULTS', 'AVAILABLE_TOOLS'];

/**
 * A role marker, anywhere in the line (all alternatives bounded, so matching is linear in the line):
 * - a role label: one of {@link ROLE_WORDS}, not preceded by a letter, digit or `_` (a JSON escape such as `\n` or
 *   `\u001b` right before it counts as a boundary: JSON text quoted in a line — a receipt, a quoted value in an
 *   error — keeps a server's line breaks as escapes, which a model may read as line breaks), then optional space and
 *   colons (`SYSTEM:`, `assistant :`, `Human:`) — rendered `‹SYSTEM›`, without the colon that makes it a speaker;
 * - a tag: `<` followed by a letter, `/`, `|`, `!` or `?`, at most 80 characters without `<` or `>`, then `>`
 *   (`</tool_result>`, `<|im_start|>`, `<system>`, `<start_of_turn>`) — rendered with `‹` `›` instead of `<` `>`;
 * - a bracketed marker: `[` `/`? one of {@link BRACKET_WORDS} `]` (`[INST]`, `[/INST]`) — rendered `‹INST›`.
 */
const ROLE_MARKER = new RegExp(
  [
    String.raw`(?:(?<![\p{L}\p{N}_])|(?<=\\(?:[bfnrtv]|u[0-9a-fA-F]{4})))(?<label>${ROLE_WORDS.join('|')})\s*:+`,
    String.raw`<(?<tag>[|/!?\p{L}][^<>]{0,80})>`,
    String.raw`\[(?<bracket>/?(?:${BRACKET_WORDS.join('|')}))\]`,
  ].join('|'),
  'giu',
);

/**
 * Cyrillic and Greek letters that a reader (and a model) takes for the Latin letters of the role words and bracket
 * markers (from Unicode's confusables, UTS #39, limited to those letters): `ЅYЅТЕМ:` with Cyrillic Ѕ, Т and Е reads
 * as `SYSTEM:`. NFKC does not fold them (they are letters of their own scripts). Each is one UTF-16 code unit mapped
 * to one, so a match in the skeleton ({@link latinSkeleton}) has the same offsets in the line.
 */
// prettier-ignore -- a table: one script's letters per line
const LATIN_LOOK_ALIKES: Readonly<Record<string, string>> = {
  // Cyrillic capitals and small letters
  А: 'A',
  В: 'B',
  С: 'C',
  Е: 'E',
  Н: 'H',
  І: 'I',
  Ј: 'J',
  К: 'K',
  М: 'M',
  О: 'O',
  Р: 'P',
  Ѕ: 'S',
  Т: 'T',
  Х: 'X',
  У: 'Y',
  Ү: 'Y',
  Ԁ: 'D',
  Ӏ: 'I',
  а: 'a',
  с: 'c',
  ԁ: 'd',
  е: 'e',
  һ: 'h',
  і: 'i',
  ј: 'j',
  ӏ: 'l',
  о: 'o',
  р: 'p',
  ѕ: 's',
  у: 'y',
  х: 'x',
  ԛ: 'q',
  ԝ: 'w',
  ѵ: 'v',
  // Greek capitals and small letters
  Α: 'A',
  Β: 'B',
  Ε: 'E',
  Ζ: 'Z',
  Η: 'H',
  Ι: 'I',
  Κ: 'K',
  Μ: 'M',
  Ν: 'N',
  Ο: 'O',
  Ρ: 'P',
  Τ: 'T',
  Υ: 'Y',
  Χ: 'X',
  ο: 'o',
  ι: 'i',
  ν: 'v',
  υ: 'u',
};
const LOOK_ALIKE = new RegExp(`[${Object.keys(LATIN_LOOK_ALIKES).join('')}]`, 'g');

/** `text` with every {@link LATIN_LOOK_ALIKES} letter replaced by its Latin letter: same length, same offsets. */
function latinSkeleton(text: string): string {
  return text.replace(LOOK_ALIKE, (letter) => LATIN_LOOK_ALIKES[letter] as string);
}

/**
 * `text` with every role marker rendered as a quoted word (see {@link ROLE_MARKER}), found in its
 * {@link latinSkeleton} and rendered with the line's own letters. Again until none is left: a tag may hold a label
 * (`<system: x>` → `‹system: x›` → `‹‹system› x›`). Each pass removes at least one `<`, `>`, `[`, `]` or `:` and
 * adds none, so it ends (in practice after two passes).
 */
function neutralizeRoleMarkers(text: string): string {
  let line = text;
  for (;;) {
    let next = '';
    let from = 0;
    for (const match of latinSkeleton(line).matchAll(ROLE_MARKER)) {
      const groups = match.groups as { label?: string; tag?: string; bracket?: string };
      // The word sits at the start of a label, after the `<` of a tag or the `[` of a bracketed marker.
      const wordAt = match.index + (groups.label === undefined ? 1 : 0);
      const word = (groups.label ?? groups.tag ?? groups.bracket) as string;
      next += `${line.slice(from, match.index)}‹${line.slice(wordAt, wordAt + word.length)}›`;
      from = match.index + match[0].length;
    }
    if (from === 0) return line;
    line = next + line.slice(from);
  }
}

/** The first role marker in `text` (after compatibility folding, look-alike letters read as Latin), or `undefined`. */
export function findRoleMarker(text: string): string | undefined {
  const folded = text.normalize('NFKC');
  ROLE_MARKER.lastIndex = 0;
  const found = ROLE_MARKER.exec(latinSkeleton(folded));
  ROLE_MARKER.lastIndex = 0;
  return found ? folded.slice(found.index, found.index + found[0].length) : undefined;
}

/** The longest prefix of `text` within `maxChars` code units that does not end in half a surrogate pair. */
function codePointPrefix(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const cut = text.slice(0, maxChars);
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
}

/** Rule 1 and 2: one line of visible, compatibility-folded text. */
function oneVisibleLine(text: string): string {
  const visible = codePointPrefix(text, MAX_INPUT_CHARS).replace(ANSI_ESCAPE, '').replace(LINE_BREAKING, ' ').replace(INVISIBLE, '');
  // Folding can bring back what the first pass removed (U+00A0 → space, nothing invisible in practice): pass again.
  return visible.normalize('NFKC').replace(LINE_BREAKING, ' ').replace(INVISIBLE, '').replace(/\s+/g, ' ').trim();
}

/**
 * Rules 1, 2 and 4 without rule 3: one line of visible, compatibility-folded text of at most `maxChars` code units,
 * role markers left as they are — for text of one's own that may quote another's (an error message naming a tool
 * called `user`), whose quoted parts get {@link toModelLine} where they are quoted.
 */
export function toVisibleLine(text: string, maxChars = MODEL_TEXT_MAX_CHARS): string {
  const line = oneVisibleLine(text);
  if (line.length <= maxChars) return line;
  return `${codePointPrefix(line, maxChars - TRUNCATION_MARK.length).trimEnd()}${TRUNCATION_MARK}`;
}

/** What {@link toModelLine} may do between folding and the final checks. */
export interface ModelLineOptions {
  /** Most UTF-16 code units of the result. @defaultValue {@link MODEL_TEXT_MAX_CHARS} */
  maxChars?: number;
  /**
   * A rewrite of the folded line before role markers are neutralised and the length is capped — the server's
   * secret redaction. Its output goes through the rule again, so it cannot break the rule.
   */
  rewrite?: (line: string) => string;
}

/**
 * Make `text` fit the rule for model-facing short text (see the module comment): one line, no control, format,
 * separator or invisible characters, compatibility forms folded, role markers neutralised, at most `maxChars`
 * code units. Idempotent when `rewrite` is (so text made fit once is left as it is), and linear in the input.
 */
export function toModelLine(text: string, options: ModelLineOptions = {}): string {
  const maxChars = options.maxChars ?? MODEL_TEXT_MAX_CHARS;
  let line = oneVisibleLine(text);
  if (options.rewrite) line = oneVisibleLine(options.rewrite(line));
  line = neutralizeRoleMarkers(line);
  if (line.length <= maxChars) return line;
  return `${codePointPrefix(line, maxChars - TRUNCATION_MARK.length).trimEnd()}${TRUNCATION_MARK}`;
}

/**
 * Where `text` breaks the rule for model-facing short text, one phrase per problem (empty when it keeps it): a
 * forbidden character (named by code point), a role marker, a length above `maxChars`.
 */
export function modelTextProblems(text: string, maxChars = MODEL_TEXT_MAX_CHARS): string[] {
  const problems: string[] = [];
  const forbidden = FORBIDDEN.exec(text);
  if (forbidden) problems.push(`contains ${describeCharacter(forbidden[0])}`);
  const marker = findRoleMarker(text);
  if (marker !== undefined) problems.push(`contains the role marker ${JSON.stringify(marker)}`);
  if (text.length > maxChars) problems.push(`is ${text.length} characters long (limit ${maxChars})`);
  return problems;
}

/** `U+202E (format character)` and the like. */
function describeCharacter(char: string): string {
  const code = `U+${(char.codePointAt(0) as number).toString(16).toUpperCase().padStart(4, '0')}`;
  if (/\p{Cc}/u.test(char)) return `control character ${code}`;
  if (/[\p{Zl}\p{Zp}]/u.test(char)) return `line or paragraph separator ${code}`;
  if (/\p{Cs}/u.test(char)) return `lone surrogate ${code}`;
  return `invisible formatting character ${code}`;
}
