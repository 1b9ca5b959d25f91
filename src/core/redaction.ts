/**
 * Secret-like strings: detection for `audit_repository` and redaction for anything a tool echoes from files
 * (log examples and templates, file names). A secret value never leaves this module unredacted.
 *
 * Detection and redaction share one set of rules but differ in how sure they must be: a finding is reported only
 * when the value looks like a real secret (so that `token = z.string()` is not one), while redaction hides any
 * value in a secret's place, because a false positive there costs a few characters of a log line and a false
 * negative leaks the secret.
 */

/** The kinds of secret a finding can be, for output schemas. */
export const SECRET_KINDS = [
  'private-key',
  'aws-access-key-id',
  'aws-secret-access-key',
  'github-token',
  'gitlab-token',
  'slack-token',
  'slack-webhook',
  'stripe-key',
  'google-api-key',
  'npm-token',
  'azure-storage-key',
  'azure-sas-token',
  'docker-auth',
  'jwt',
  'url-credentials',
  'basic-auth',
  'bearer-token',
  'password',
  'credential-assignment',
] as const;

/** What kind of secret a finding looks like. */
export type SecretKind = (typeof SECRET_KINDS)[number];

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
  /**
   * Global pattern with indices (`dg`); the value is the group named `value` when the pattern has one, else the
   * first capture group that took part in the match, else the whole match. It must run in linear time on any
   * line (see {@link RULES}).
   */
  pattern: RegExp;
  /**
   * Substrings of which every match holds one (case as written): a line with none of them is not searched with
   * {@link pattern}. Lines pass the {@link HINTS} for one rule's keyword and would otherwise be read by all of them.
   */
  needs?: readonly string[];
  /** Whether a matched value is a secret at all; both redaction and detection skip it otherwise. Default: yes. */
  accept?(value: string): boolean;
  /**
   * Whether a finding is reported (see the module comment); redaction does not ask. Default: yes.
   *
   * @param quoted - whether the value follows a quote (an unquoted value never does).
   */
  report?(value: string, quoted: boolean): boolean;
}

/** Bits per character above which a 16+ character value is taken for a generated secret, not a word. */
const MIN_ENTROPY_BITS = 3.5;
const MIN_GENERIC_LENGTH = 16;
/** Characters of generated tokens (base64, base64url, hex): code such as `z.string()` or `${token}` is not one. */
const TOKEN_CHARACTERS = /^[A-Za-z0-9_\-+/=~.]+$/;
/**
 * The value of an assignment: a quoted string as a whole (so `"correct horse battery"` is one value, not a
 * value followed by two words left in the clear), else up to a space, quote or separator. Quotes may be
 * escaped (`\"password\":\"…\"`, JSON logged inside a JSON string).
 */
const ASSIGNED_VALUE = String.raw`(?:\\?["'])?\s*[:=]\s*(?:\\?"([^"\\\n]*)|\\?'([^'\\\n]*)|([^\s"'\\,;&]+))`;
/** Private key armour; the key's body lines follow on lines of their own (see {@link SecretRedactor}). */
const PRIVATE_KEY_BEGIN = /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/;
const PRIVATE_KEY_END = /-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/;

/**
 * Every rule runs in time linear in the line, whatever the line (checked by a property test): a pattern that scans
 * an unbounded run and may then fail starts only where that run starts (a lookbehind), because starting again
 * from every position of the run would read it once per position.
 */
const RULES: readonly Rule[] = [
  // The header and whatever follows on its line: a key logged as one line (JSON-escaped newlines) or in one
  // piece has its body there.
  {
    kind: 'private-key',
    pattern: new RegExp(`${PRIVATE_KEY_BEGIN.source}(?:.*?${PRIVATE_KEY_END.source}|.*)`, 'dg'),
    needs: ['PRIVATE KEY'],
  },
  { kind: 'aws-access-key-id', pattern: /\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b/dg },
  // 40 characters after the keyword, separated by `=`, `:` or just a space (the format of the AWS CLI's output).
  {
    kind: 'aws-secret-access-key',
    pattern: /(?:aws[_-]?)?secret[_-]?(?:access[_-]?)?key(?:\\?["'])?(?:\s*[:=]\s*|\s+)(?:\\?["'])?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])/dgi,
  },
  { kind: 'github-token', pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b/dg, needs: ['gh', 'github_pat_'] },
  { kind: 'gitlab-token', pattern: /\bglpat-[A-Za-z0-9_-]{20,}/dg, needs: ['glpat-'] },
  { kind: 'slack-token', pattern: /\bxox[abposr]-[A-Za-z0-9-]{10,}/dg, needs: ['xox'] },
  { kind: 'slack-webhook', pattern: /hooks\.slack\.com\/services\/T[A-Z0-9]+\/B[A-Z0-9]+\/([A-Za-z0-9]{16,})/dg, needs: ['hooks.slack.com/services/'] },
  // An Azure storage account key: 88 characters of base64 in a connection string or after --account-key.
  { kind: 'azure-storage-key', pattern: /(?:AccountKey\s*=\s*|--account-key[ =])([A-Za-z0-9+/]{86}==)/dg, needs: ['AccountKey', '--account-key'] },
  // The signature of an Azure shared access signature (a URL that grants access by itself).
  { kind: 'azure-sas-token', pattern: /[?&]sig=((?:[A-Za-z0-9+/=]|%[0-9A-Fa-f]{2}){30,})/dg, needs: ['sig='] },
  // A registry login in a Docker config: base64 of `user:password`.
  {
    kind: 'docker-auth',
    pattern: /"auth"\s*:\s*"([A-Za-z0-9+/]{8,}={0,2})"/dg,
    needs: ['"auth"'],
    accept: isBasicCredentials,
    report: (value) => !isPlaceholderCredentials(value),
  },
  // Secret and restricted keys; publishable keys (`pk_`) are meant to be public.
  { kind: 'stripe-key', pattern: /\b[rs]k_(?:live|test)_[0-9A-Za-z]{10,247}\b/dg, needs: ['k_live_', 'k_test_'] },
  { kind: 'google-api-key', pattern: /\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])/dg, needs: ['AIza'] },
  { kind: 'npm-token', pattern: /\bnpm_[A-Za-z0-9]{36}(?![A-Za-z0-9])/dg, needs: ['npm_'] },
  // Three base64url segments, the first two JSON objects (`eyJ` is `{"`). Read from the start of the run of
  // base64url characters, skipping (atomically: a lookahead with a back-reference) to its first `eyJ` at a word
  // boundary: every later one in the run shares its end, so it could not succeed where the first one failed.
  {
    kind: 'jwt',
    pattern: /(?<![A-Za-z0-9_-])(?=((?:(?!\beyJ)[A-Za-z0-9_-])*))\1(?<value>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})/dg,
    needs: ['eyJ'],
  },
  // The scheme is read from the start of its run (its first letter is where the scheme starts). The user may be
  // empty (`redis://:secret@host`); a placeholder password (`user:password@`, `${PGPASSWORD}`) is no secret.
  {
    kind: 'url-credentials',
    pattern: /(?<![a-zA-Z0-9+.-])[0-9+.-]*[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^\s:/@]*:([^\s/@]+)@/dg,
    needs: ['://'],
    accept: (value) => !isPlaceholder(value),
  },
  // Only base64 of `user:password` counts, which keeps prose ("Basic authentication") out.
  {
    kind: 'basic-auth',
    pattern: /\bbasic\s+([A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])/dgi,
    accept: isBasicCredentials,
    report: (value) => !isPlaceholderCredentials(value),
  },
  { kind: 'bearer-token', pattern: /\bbearer\s+([A-Za-z0-9._~+/=-]{8,})/dgi, report: looksLikeToken },
  // Before the generic assignments: a password is reported whatever its entropy (`hunter2` is one).
  {
    kind: 'password',
    pattern: new RegExp(`(?:passw(?:or)?d|passphrase|pwd)${ASSIGNED_VALUE}`, 'dgi'),
    report: isPasswordLiteral,
  },
  // ~/.netrc: `machine host login user password secret`.
  {
    kind: 'password',
    pattern: /\bmachine\s+\S+\s+login\s+\S+\s+password\s+([^\s`'",;]+)/dg,
    needs: ['machine'],
    report: (value) => !isPlaceholder(value),
  },
  {
    kind: 'credential-assignment',
    pattern: new RegExp(
      `(?:api[_-]?key|apikey|secret(?:[_-]?key)?|access[_-]?key|auth[_-]?token|token|client[_-]?secret|(?<![A-Za-z])pat)${ASSIGNED_VALUE}`,
      'dgi',
    ),
    report: looksGenerated,
  },
];

/**
 * A cheap test that rules out most lines before the full rules run: every rule needs one of these substrings,
 * so a line without any of them has nothing to redact or report. Written as a few patterns, each of alternatives
 * that share their first characters, rather than one of 21 alternatives: the engine then skips through a line
 * about half as fast again (the keyword part alone in a third of the time), for the same lines.
 */
const HINTS: readonly RegExp[] = [
  /[Kk][Ee][Yy]|[Pp](?:[Aa](?:[Tt]|[Ss][Ss](?:[Ww]|[Pp][Hh]))|[Ww][Dd])|[Tt][Oo][Kk][Ee][Nn]|[Ss][Ee][Cc][Rr][Ee][Tt]|[Bb](?:earer|EARER|asic|ASIC)|A(?:KIA|SIA|GPA|IDA|ROA|NPA|Iza)/,
  /PRIVATE KEY|s(?:ig=|k_(?:live|test)_)|rk_(?:live|test)_/,
  /g(?:h[pousr]_|ithub_pat_|lpat-)|xox[abposr]-|hooks\.slack/,
  /npm_|eyJ|"auth"|machine\s/,
  /:\/\/[^\s:/@]*:[^\s/@]+@/,
];

/** Whether a text holds one of the substrings some rule needs (see {@link HINTS}). */
function hinted(text: string): boolean {
  for (const hint of HINTS) if (hint.test(text)) return true;
  return false;
}

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
  return looksLikeToken(value) && /\d/.test(value) && /[A-Za-z]/.test(value);
}

/**
 * Whether a bearer value looks like a token rather than prose: long, only token characters, high entropy. Digits
 * are not required: opaque tokens are often letters only, and "Bearer" is rarely followed by a 16-letter word.
 */
function looksLikeToken(value: string): boolean {
  return value.length >= MIN_GENERIC_LENGTH && TOKEN_CHARACTERS.test(value) && shannonEntropy(value) >= MIN_ENTROPY_BITS;
}

const PRINTABLE = /^[\x20-\x7e]*$/;

/** Whether base64 `value` decodes to printable `user:password`, the content of a Basic authorization. */
function isBasicCredentials(value: string): boolean {
  // Two tests rather than `^[\x20-\x7e]*:[\x20-\x7e]*$`, which retries every colon and is quadratic on `::::…`.
  const decoded = Buffer.from(value, 'base64').toString('latin1');
  return decoded.includes(':') && PRINTABLE.test(decoded);
}

/**
 * Values that stand for a secret rather than being one: masks (`****`, `xxxx`), references (`${DB_PASSWORD}`,
 * `{{ .Values.password }}`, `%(password)s`, `$PASS`), type names, and the words people put where a value goes
 * (`changeme`, `password`, `example`, `<your-password>`, `[REDACTED]`, `your_api_key`).
 */
const PLACEHOLDER =
  /^(?:[*xX•.…_-]*|<[^>]*>|\[[^\]]*\]|\$\{.*|\{\{.*|\{[^}]*\}|%\(?\w*\)?s|\$\w+|(?:none|null|nil|undefined|true|false|str|string|bool|int|number)\??|(?:change[_-]?me|password|passwd|passw0rd|secret|example|sample|dummy|placeholder|redacted|test|testing|foo|bar|baz|xxx+|your[_-]?[\w-]*|my[_-]?(?:password|secret|token)|(?:dummy|fake|test|example)[\w-]*))$/i;
/** What follows `passwd:` in /etc/nsswitch.conf: the sources of the password database, not a password. */
const NSSWITCH_SOURCES = /^(?:files|compat|db|nis|nisplus|sss|systemd|ldap|winbind|hesiod|cache|usrfiles|altfiles|dns)$/;

/** Whether a credential value is a placeholder or reference (see {@link PLACEHOLDER}). */
function isPlaceholder(value: string): boolean {
  return PLACEHOLDER.test(value);
}

/** Whether base64 `user:password` holds placeholders (`username:password`, `user:changeme`) rather than a login. */
function isPlaceholderCredentials(value: string): boolean {
  const decoded = Buffer.from(value, 'base64').toString('latin1');
  const colon = decoded.indexOf(':');
  return colon < 0 || isPlaceholder(decoded.slice(colon + 1));
}

/**
 * Whether a value assigned to a password name is a literal password, however guessable: a quoted string that is
 * not a placeholder, or an unquoted value that is neither a placeholder, a reference (`${DB_PASSWORD}`, `$1`), a
 * path (`pwd=/home/x`) nor code (`getenv(…)`, `args.password`).
 */
function isPasswordLiteral(value: string, quoted: boolean): boolean {
  // `password === undefined` compares, it does not assign; `passwd:` followed by punctuation is prose.
  if (isPlaceholder(value) || value.startsWith('=') || !/[A-Za-z0-9]/.test(value)) return false;
  if (!quoted && NSSWITCH_SOURCES.test(value)) return false;
  return quoted || !/^[~./]|[()[\]{}]|^[A-Za-z_]\w*\.[A-Za-z_]/.test(value);
}

/** One rule's match: the value and where it is in the text. */
interface Match {
  rule: Rule;
  start: number;
  end: number;
  value: string;
  quoted: boolean;
}

/** Every accepted match of every rule in `text`, rules in {@link RULES} order, each rule's in text order. */
function matchAll(text: string): Match[] {
  const matches: Match[] = [];
  for (const rule of RULES) {
    if (rule.needs && !rule.needs.some((needed) => text.includes(needed))) continue;
    rule.pattern.lastIndex = 0;
    for (let m = rule.pattern.exec(text); m; m = rule.pattern.exec(text)) {
      const group = m.findIndex((value, index) => index > 0 && value !== undefined);
      const [start, end] = m.indices?.groups?.['value'] ?? m.indices?.[group > 0 ? group : 0] ?? [m.index, m.index + m[0].length];
      const value = text.slice(start, end);
      if (value === '' || !(rule.accept?.(value) ?? true)) continue;
      const before = text[start - 1];
      matches.push({ rule, start, end, value, quoted: before === '"' || before === "'" });
    }
  }
  return matches;
}

/**
 * Secret-like strings in one line, one finding per value: where rules overlap (`AWS_SECRET_ACCESS_KEY=…` is also
 * a generic `access_key=…`), the more specific rule, listed first, reports it.
 */
export function findSecrets(line: string): SecretFinding[] {
  if (!hinted(line)) return [];
  const kept: Match[] = [];
  // Characters already reported: checking a match against them costs its length, and the matches of one rule do
  // not overlap, so the whole line costs its length times the number of rules (comparing every match with every
  // kept one was quadratic in the findings of a line such as `pwd=1pwd=2pwd=3…`).
  const reported = new Uint8Array(line.length);
  for (const match of matchAll(line)) {
    if (!(match.rule.report?.(match.value, match.quoted) ?? true)) continue;
    if (reported.subarray(match.start, match.end).includes(1)) continue;
    reported.fill(1, match.start, match.end);
    kept.push(match);
  }
  return kept.sort((a, b) => a.start - b.start).map((match) => ({ kind: match.rule.kind, column: match.start, preview: redactValue(match.value) }));
}

/**
 * `text` with every secret-like value replaced by its {@link redactValue} form. Values matched by several rules
 * are redacted as one span, so that no rule leaves part of another's value in the clear.
 */
export function redactSecrets(text: string, replace: (value: string) => string = redactValue): string {
  if (!hinted(text)) return text;
  const spans: [start: number, end: number][] = [];
  for (const { start, end } of matchAll(text).sort((a, b) => a.start - b.start)) {
    const last = spans.at(-1);
    if (last && start < last[1]) last[1] = Math.max(last[1], end);
    else spans.push([start, end]);
  }
  let result = '';
  let at = 0;
  for (const [start, end] of spans) {
    result += text.slice(at, start) + replace(text.slice(start, end));
    at = end;
  }
  return result + text.slice(at);
}

/** A run of base64 long enough to be key material, or a whole line of base64 (the short last line of a body). */
const KEY_MATERIAL = /[A-Za-z0-9+/]{16,}={0,2}|^\s*[A-Za-z0-9+/]+={0,2}\s*$/g;

/**
 * Redacts the lines of one file in order. Unlike {@link redactSecrets} it remembers whether it is inside a
 * private key block, whose body lines are bare base64 that nothing on the line itself tells from other data:
 * between a `BEGIN … PRIVATE KEY` line and its `END` line (or the end of the file when `END` is missing), runs of
 * base64 are redacted too. Use one instance per file.
 */
export class SecretRedactor {
  private inPrivateKey = false;

  /** The line with its secrets redacted. */
  /** @param replace - what a value becomes; default {@link redactValue} (a short preview). */
  redact(line: string, replace: (value: string) => string = redactValue): string {
    let text = line;
    if (this.inPrivateKey) {
      const end = PRIVATE_KEY_END.exec(line);
      const body = end ? line.slice(0, end.index) : line;
      text = body.replace(KEY_MATERIAL, (material) => replace(material.trim())) + line.slice(body.length);
      if (end) this.inPrivateKey = false;
    }
    const begin = PRIVATE_KEY_BEGIN.exec(text);
    if (begin && !PRIVATE_KEY_END.test(text.slice(begin.index))) this.inPrivateKey = true;
    return redactSecrets(text, replace);
  }
}
