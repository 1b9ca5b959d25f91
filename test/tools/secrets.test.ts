import { describe, expect, it } from 'vitest';
import { findSecrets, redactSecrets, redactValue } from '../../src/tools/secrets.js';

// Fake values assembled at run time so that scanners do not flag this file.
const GITHUB = `ghp_${'a1B2c3D4e5F6g7H8i9J0'.repeat(2).slice(0, 36)}`;
const SLACK = `xoxb-${'1234567890'}-${'abcdefghijKLMNOP'}`;
const JWT = `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.${'dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'}`;

describe('secret detection', () => {
  it('finds token formats and reports only a redacted preview', () => {
    const line = `token ${GITHUB} slack ${SLACK} jwt ${JWT}`;
    const findings = findSecrets(line);
    expect(findings.map((f) => f.kind)).toEqual(['github-token', 'slack-token', 'jwt']);
    expect(findings.map((f) => f.preview)).toEqual(['ghp_…', 'xoxb…', 'eyJh…']);
    expect(findings[0]?.column).toBe(line.indexOf(GITHUB));
    expect(JSON.stringify(findings)).not.toContain(GITHUB.slice(4));
  });

  it('reports credential assignments only when the value looks generated', () => {
    expect(findSecrets('api_key = "Zx9Qw2Lm7Rt4Yp1Vb8Nc3Kd6"').map((f) => f.kind)).toEqual(['credential-assignment']);
    expect(findSecrets('const token = z.string().min(1);')).toEqual([]);
    expect(findSecrets('password = getenv("DB_PASSWORD")')).toEqual([]);
    expect(findSecrets('password = "changeme"')).toEqual([]);
    expect(findSecrets(' * A bearer capability token for the client')).toEqual([]);
  });

  it('redacts every credential-like value in echoed text, random-looking or not', () => {
    const text = `login password=hunter2 url=https://bob:pa55word@db.example.com Authorization: Bearer abcdefgh12345678 ${GITHUB}`;
    const redacted = redactSecrets(text);
    for (const value of ['hunter2', 'pa55word', 'abcdefgh12345678', GITHUB]) expect(redacted).not.toContain(value);
    expect(redacted).toContain('password=h…');
    expect(redacted).toContain('https://bob:pa…@db.example.com');
  });

  it('shortens values to at most four characters and less for short ones', () => {
    expect(redactValue('AKIAIOSFODNN7EXAMPLE')).toBe('AKIA…');
    expect(redactValue('abc')).toBe('…');
    expect(redactValue('abcdefgh')).toBe('ab…');
  });
});
