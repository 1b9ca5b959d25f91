import { describe, expect, it } from 'vitest';

import { findSecrets, redactSecrets, redactValue, SecretRedactor } from '../../src/core/redaction.js';
import { PLANTED_SECRETS } from '../tools/planted-secrets.js';

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
    expect(findSecrets(' * A bearer capability token for the client')).toEqual([]);
    expect(findSecrets('Basic authentication is enabled')).toEqual([]);
  });

  it('reports passwords assigned as literals whatever their entropy, but not code, references or placeholders', () => {
    for (const line of ['password = "Winter2024!"', 'passwd: hunter2', 'MYSQL_PWD=letmein', '{\\"password\\":\\"hunter2\\"}']) {
      expect(
        findSecrets(line).map((f) => f.kind),
        line,
      ).toEqual(['password']);
    }
    for (const line of [
      'password = getenv("DB_PASSWORD")',
      'password: string;',
      'password = args.password',
      'DB_PASSWORD=${DB_PASSWORD}',
      'password: "********"',
      'pwd=/home/user',
      'password = "changeme"',
      'passwd:         files systemd',
      'if (password === undefined) return;',
    ]) {
      expect(findSecrets(line), line).toEqual([]);
    }
  });

  it.each(PLANTED_SECRETS.map((s) => [s.kind, s] as const))('finds and redacts a %s', (kind, planted) => {
    const found = planted.lines.flatMap((line) => findSecrets(line).map((f) => f.kind));
    expect(found.length).toBeGreaterThanOrEqual(planted.kind === 'private-key' ? 1 : planted.values.length);
    expect(new Set(found)).toEqual(new Set([kind]));
    const redactor = new SecretRedactor();
    const redacted = planted.lines.map((line) => redactor.redact(line)).join('\n');
    for (const value of planted.values) {
      expect(redacted).not.toContain(value);
      expect(redacted).not.toContain(value.slice(4));
    }
  });

  it('reports one finding per value where rules overlap', () => {
    const secret = PLANTED_SECRETS.find((s) => s.kind === 'aws-secret-access-key')?.values[0];
    expect(findSecrets(`AWS_SECRET_ACCESS_KEY=${secret}`).map((f) => f.kind)).toEqual(['aws-secret-access-key']);
  });

  it('redacts every credential-like value in echoed text, random-looking or not', () => {
    const text = `login password=hunter2 url=https://bob:pa55word@db.example.com Authorization: Bearer abcdefgh12345678 ${GITHUB}`;
    const redacted = redactSecrets(text);
    for (const value of ['hunter2', 'pa55word', 'abcdefgh12345678', GITHUB]) expect(redacted).not.toContain(value);
    expect(redacted).toContain('password=h…');
    expect(redacted).toContain('https://bob:pa…@db.example.com');
  });

  it('redacts the body of a private key line by line, and only inside the key', () => {
    const redactor = new SecretRedactor();
    const body = ['MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun', 'fAt0gunXy7Q=='];
    const lines = [
      'aGVsbG8gd29ybGQgdGhpcyBpcyBub3QgYSBrZXk=',
      `2024-01-01T00:00:00Z DEBUG loaded -----BEGIN ${'PRIVATE'} KEY-----`,
      ...body,
      `-----END ${'PRIVATE'} KEY-----`,
      'aGVsbG8gd29ybGQgdGhpcyBpcyBub3QgYSBrZXk=',
    ].map((line) => redactor.redact(line));
    expect(lines).toEqual([
      'aGVsbG8gd29ybGQgdGhpcyBpcyBub3QgYSBrZXk=',
      '2024-01-01T00:00:00Z DEBUG loaded ----…',
      'MIIE…',
      'fAt…',
      `-----END ${'PRIVATE'} KEY-----`,
      'aGVsbG8gd29ybGQgdGhpcyBpcyBub3QgYSBrZXk=',
    ]);
  });

  it('shortens values to at most four characters and less for short ones', () => {
    expect(redactValue('AKIAIOSFODNN7EXAMPLE')).toBe('AKIA…');
    expect(redactValue('abc')).toBe('…');
    expect(redactValue('abcdefgh')).toBe('ab…');
  });
});
