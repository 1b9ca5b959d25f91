/**
 * Secret-like strings: detection for `audit_repository` and redaction for anything a tool echoes from files
 * (log examples and templates). A secret value never leaves this module unredacted.
 */

/** What kind of secret a finding looks like. */
export type SecretKind =
  | 'private-key'
  | 'aws-access-key-id'
  | 'github-token'
  | 'slack-token'
  | 'jwt'
  | 'credential-assignment'
  | 'url-credentials'
  | 'bearer-token';

/** A secret-like string found in a line. */
export interface SecretFinding {
  kind: SecretKind;
  /** 0-based column of the value. */
  column: number;
  /** The value redacted with {@link redactValue}; never the value itself. */
  preview: string;
}

interface Rule {
  kind: SecretKind;
  /** Global pattern; the value is capture group 1 when present, else the whole match. */
  pattern: RegExp;
  /** Only reported by {@link findSecrets} when the value looks generated (see {@link looksGenerated}). */
  needsEntropy?: boolean;
}

/** Bits per character above which a 16+ character value is taken for a generated secret, not a word. */
const MIN_ENTROPY_BITS = 3.5;
const MIN_GENERIC_LENGTH = 16;
/** Characters of generated tokens (base64, base64url, hex): code such as `z.string()` or `${token}` is not one. */
const TOKEN_CHARACTERS = /^[A-Za-z0-9_\-+/=~.]+$/;

const RULES: readonly Rule[] = [
  { kind: 'private-key', pattern: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/g },
  { kind: 'aws-access-key-id', pattern: /\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b/g },
  { kind: 'github-token', pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b/g },
  { kind: 'slack-token', pattern: /\bxox[abposr]-[A-Za-z0-9-]{10,}/g },
  { kind: 'jwt', pattern: /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g },
  { kind: 'url-credentials', pattern: /[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^\s:/@]+:([^\s/@]+)@/g },
  { kind: 'bearer-token', pattern: /\b[Bb]earer\s+([A-Za-z0-9._~+/=-]{8,})/g, needsEntropy: true },
  {
    kind: 'credential-assignment',
    pattern:
      /(?:api[_-]?key|apikey|secret(?:[_-]?key)?|access[_-]?key|auth[_-]?token|token|passw(?:or)?d|pwd|client[_-]?secret)["']?\s*[:=]\s*["']?([^\s"',;&]+)/gi,
    needsEntropy: true,
  },
];

/**
 * A value shortened so that it identifies a finding without revealing it: at most its first 4 characters
 * (fewer for short values) and an ellipsis.
 */
export function redactValue(value: string): string {
  return `${value.slice(0, Math.min(4, Math.floor(value.length / 4)))}…`;
}

/** Shannon entropy of `text` in bits per character. */
export function shannonEntropy(text: string): number {
  const counts = new Map<string, number>();
  for (const c of text) counts.set(c, (counts.get(c) ?? 0) + 1);
  let bits = 0;
  for (const count of counts.values()) {
    const p = count / text.length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

/**
 * Whether a value assigned to a credential keyword looks like a generated secret rather than code, a word or a
 * placeholder: long, only token characters, letters and digits mixed, and high entropy.
 */
function looksGenerated(value: string): boolean {
  return (
    value.length >= MIN_GENERIC_LENGTH &&
    TOKEN_CHARACTERS.test(value) &&
    /\d/.test(value) &&
    /[A-Za-z]/.test(value) &&
    shannonEntropy(value) >= MIN_ENTROPY_BITS
  );
}

/**
 * Secret-like strings in one line. Keyword assignments (`api_key = "…"`) and bearer tokens count only when the
 * value looks generated, which keeps `password = getenv(...)`, prose and placeholders out of reports.
 */
export function findSecrets(line: string): SecretFinding[] {
  const findings: SecretFinding[] = [];
  for (const rule of RULES) {
    rule.pattern.lastIndex = 0;
    for (let m = rule.pattern.exec(line); m; m = rule.pattern.exec(line)) {
      const value = m[1] ?? m[0];
      if (rule.needsEntropy && !looksGenerated(value)) continue;
      const column = m.index + m[0].lastIndexOf(value);
      findings.push({ kind: rule.kind, column, preview: redactValue(value) });
    }
  }
  return findings;
}

/**
 * A cheap test that rules out most lines before the full {@link redactSecrets}: every rule needs one of these
 * substrings, so a line without any of them has nothing to redact.
 */
const HINT =
  /A(?:KIA|SIA|GPA|IDA|ROA|NPA)|gh[pousr]_|github_pat_|xox[abposr]-|eyJ|PRIVATE KEY|:\/\/[^\s:/@]+:[^\s/@]+@|[Bb]earer|[Kk][Ee][Yy]|[Ss][Ee][Cc][Rr][Ee][Tt]|[Tt][Oo][Kk][Ee][Nn]|[Pp][Aa][Ss][Ss][Ww]|[Pp][Ww][Dd]/;

/** Whether `text` may contain something {@link redactSecrets} would redact (false means it certainly does not). */
export function mightContainSecret(text: string): boolean {
  return HINT.test(text);
}

/**
 * `text` with every secret-like value replaced by its {@link redactValue} form. Redaction is broader than
 * detection: any value assigned to a credential keyword is redacted, random-looking or not.
 */
export function redactSecrets(text: string): string {
  let result = text;
  for (const rule of RULES) {
    rule.pattern.lastIndex = 0;
    result = result.replace(rule.pattern, (match: string, value?: string) => {
      if (typeof value !== 'string') return redactValue(match);
      const at = match.lastIndexOf(value);
      return match.slice(0, at) + redactValue(value) + match.slice(at + value.length);
    });
  }
  return result;
}
