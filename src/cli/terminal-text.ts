import { escapeJsonText } from './json-output.js';

/** C0 controls but tab and line feed, DEL, and C1 controls: what a terminal acts on instead of showing. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const TERMINAL_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * A tool result's text as written to a terminal: every control character but tab and line feed shown as its Unicode
 * control picture (ESC as `␛`, CR as `␍`, BEL as `␇`, DEL as `␡`) or, for C1 controls, as `<U+009B>`, so a result
 * from any server can neither clear the screen, write the clipboard (OSC 52) nor rewrite a line already printed.
 * Only for a terminal: piped or saved, a result is the tool's data and passes byte for byte (`| jq`, `--json`,
 * `--output`).
 */
export function terminalText(text: string): string {
  return text.replace(TERMINAL_CONTROL, (character) => {
    const code = character.charCodeAt(0);
    if (code < 0x20) return String.fromCharCode(0x2400 + code);
    if (code === 0x7f) return '\u2421';
    return `<U+${code.toString(16).toUpperCase().padStart(4, '0')}>`;
  });
}

/**
 * How `--output` renders what it copies to a terminal: a `--json` document with DEL, the C1 controls and U+2028/U+2029
 * written as `\uXXXX` escapes (the same JSON value; `escapeJsonText`), a text result with {@link terminalText}.
 */
export function onTerminal(json: boolean): (text: string) => string {
  return json ? escapeJsonText : terminalText;
}
