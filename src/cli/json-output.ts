/**
 * The CLI's JSON documents (`--json` on stdout, `verify --json FILE`): `JSON.stringify(value, null, 2)` and a line
 * break, with the characters `JSON.stringify` leaves as they are but a terminal or a reader acts on written as
 * `\uXXXX` escapes — DEL and the C1 controls (U+007F–U+009F; U+009B is a CSI that starts an escape sequence on many
 * terminals, U+0085 a line break to some readers) and the line and paragraph separators U+2028 / U+2029. The
 * document is the same JSON value: those characters can only stand inside strings, where the escape means them.
 * What a server sends reaches stdout this way when an agent asks for `--json`; a tool result saved with
 * `--output … --json` is written as it was (`cli/json-layout.ts`).
 */

/** Characters written as escapes (see the module comment). */
const ESCAPED = /[\u007f-\u009f\u2028\u2029]/g;

/** JSON text with the characters of {@link ESCAPED} written as `\uXXXX` escapes: the same JSON value. */
export function escapeJsonText(json: string): string {
  return json.replace(ESCAPED, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** `value` as the CLI's JSON document: laid out with two spaces, escaped as above, ended by a line break. */
export function jsonDocument(value: unknown): string {
  return `${escapeJsonText(JSON.stringify(value, null, 2))}\n`;
}

/** Write `value` to stdout as a {@link jsonDocument}. */
export function writeJson(value: unknown): void {
  process.stdout.write(jsonDocument(value));
}
