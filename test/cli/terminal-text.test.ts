import { describe, expect, it } from 'vitest';

import { terminalText } from '../../src/cli/terminal-text.js';

// A result on a terminal: shown, not acted on (the e2e with a pseudo-terminal is in remote-text.test.ts).
describe('terminalText', () => {
  it('shows every control character but tab and line feed: C0 as control pictures, DEL, C1 as code points', () => {
    expect(terminalText('a\u001b[2J\u0007\r\u0000\u007f\u009b31m\u0085z')).toBe('a␛[2J␇␍␀␡<U+009B>31m<U+0085>z');
  });
  it('control: text, tabs, line feeds and non-Latin letters pass as they are', () => {
    const text = 'line 1\n\tcol 2 — Ärger 日本語 🙂\n';
    expect(terminalText(text)).toBe(text);
  });
});
