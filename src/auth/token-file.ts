import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';

import { z } from 'zod';

import { TasksError } from '../core/errors.js';
import { AuthenticationError, type Authenticator, type Principal } from '../core/owner.js';
import { ErrorCode } from '../protocol/constants.js';
import { isScopeToken, TASK_SCOPES } from '../protocol/scopes.js';

const part = z
  .string()
  .min(1)
  .max(256)
  .refine((value) => !value.includes('|'), 'must not contain "|"');

const TokenFileSchema = z.object({
  tokens: z
    .array(
      z.object({
        /** The bearer token as clients send it: at least 16 characters of the RFC 6750 token alphabet. */
        token: z
          .string()
          .min(16)
          .regex(/^[A-Za-z0-9\-._~+/]+=*$/, 'must use only the bearer-token characters A-Z a-z 0-9 - . _ ~ + / ='),
        issuer: part,
        subject: part,
        tenant: part,
        /** Granted scopes; absent = every task scope and every tool scope (never admin), so older files keep working. */
        scopes: z.array(z.string().refine(isScopeToken, 'must be an OAuth scope token (printable ASCII, no space, " or \\)')).optional(),
      }),
    )
    .min(1)
    .refine(
      (tokens) => new Set(tokens.map((entry) => entry.token)).size === tokens.length,
      'the same token is listed twice (it would authenticate as only one of the principals)',
    ),
});

/** The JSON shape of a `--auth tokens:<file>` file. */
export type TokenFile = z.infer<typeof TokenFileSchema>;

/** Options of {@link TokenFileAuthenticator}. */
export interface TokenFileOptions {
  /** Scopes of an entry without `scopes` (see `ScopePolicy.requestorScopes`). @defaultValue the task scopes */
  defaultScopes?: readonly string[];
}

function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * The text of a token file.
 * @throws TasksError `-32602` when it cannot be read.
 */
export function readTokenFileText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new TasksError(ErrorCode.InvalidParams, `cannot read token file ${path}: ${(error as Error).message}`, undefined, { cause: error });
  }
}

/**
 * Parse and validate the text of a token file.
 * @throws TasksError `-32602` naming every problem.
 */
export function parseTokenFile(text: string, shownPath: string): TokenFile {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new TasksError(ErrorCode.InvalidParams, `invalid token file ${shownPath}: ${(error as Error).message}`, undefined, { cause: error });
  }
  const parsed = TokenFileSchema.safeParse(raw);
  if (!parsed.success) throw new TasksError(ErrorCode.InvalidParams, `invalid token file ${shownPath}: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/**
 * Bearer-token authentication from a static file:
 * `{"tokens":[{"token","issuer","subject","tenant","scopes"?}]}`. Only SHA-256 digests of the tokens are kept in
 * memory, compared in constant time against every entry. Static tokens do not expire; they end when they leave the
 * file (see `TokenFileWatcher` for reloading).
 */
export class TokenFileAuthenticator implements Authenticator {
  private readonly entries: Array<{ digest: Buffer; principal: Principal }>;

  constructor(file: TokenFile, options: TokenFileOptions = {}) {
    const defaultScopes = Object.freeze([...(options.defaultScopes ?? TASK_SCOPES)]);
    this.entries = file.tokens.map(({ token, issuer, subject, tenant, scopes }) => ({
      digest: sha256(token),
      principal: Object.freeze({ issuer, subject, tenant, scopes: scopes === undefined ? defaultScopes : Object.freeze([...new Set(scopes)]) }),
    }));
  }

  /** How many tokens the file holds (for the reload log line; never the tokens). */
  get size(): number {
    return this.entries.length;
  }

  /**
   * Load and validate a token file.
   * @throws TasksError `-32602` naming every problem when the file is missing or malformed.
   */
  static fromFile(path: string, options: TokenFileOptions = {}): TokenFileAuthenticator {
    return new TokenFileAuthenticator(parseTokenFile(readTokenFileText(path), path), options);
  }

  async verify(token: string): Promise<Principal> {
    const digest = sha256(token);
    let found: Principal | undefined;
    // Every entry is compared, so the time taken does not tell which one matched.
    for (const entry of this.entries) if (timingSafeEqual(entry.digest, digest)) found = entry.principal;
    if (!found) throw new AuthenticationError('invalid_token', 'Unknown bearer token');
    return found;
  }
}
