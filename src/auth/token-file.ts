import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { TasksError } from '../core/errors.js';
import type { Authenticator, Principal } from '../core/owner.js';
import { ErrorCode } from '../protocol/constants.js';

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
        token: z.string().min(16).regex(/^[A-Za-z0-9\-._~+/]+=*$/, 'must use only the bearer-token characters A-Z a-z 0-9 - . _ ~ + / ='),
        issuer: part,
        subject: part,
        tenant: part,
      }),
    )
    .min(1)
    .refine((tokens) => new Set(tokens.map((entry) => entry.token)).size === tokens.length, 'the same token is listed twice (it would authenticate as only one of the principals)'),
});

/** The JSON shape of a `--auth tokens:<file>` file. */
export type TokenFile = z.infer<typeof TokenFileSchema>;

function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * Bearer-token authentication from a static file: `{"tokens":[{"token","issuer","subject","tenant"}]}`.
 * Only SHA-256 digests of the tokens are kept in memory, compared in constant time.
 */
export class TokenFileAuthenticator implements Authenticator {
  private readonly entries: Array<{ digest: Buffer; principal: Principal }>;

  constructor(file: TokenFile) {
    this.entries = file.tokens.map(({ token, issuer, subject, tenant }) => ({ digest: sha256(token), principal: { issuer, subject, tenant } }));
  }

  /**
   * Load and validate a token file.
   * @throws TasksError `-32602` naming every problem when the file is missing or malformed.
   */
  static fromFile(path: string): TokenFileAuthenticator {
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(path, 'utf8'));
    } catch (error) {
      throw new TasksError(ErrorCode.InvalidParams, `cannot read token file ${path}: ${(error as Error).message}`, undefined, { cause: error });
    }
    const parsed = TokenFileSchema.safeParse(raw);
    if (!parsed.success) throw new TasksError(ErrorCode.InvalidParams, `invalid token file ${path}: ${z.prettifyError(parsed.error)}`);
    return new TokenFileAuthenticator(parsed.data);
  }

  authenticate(authorizationHeader: string | undefined): Principal | undefined {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorizationHeader ?? '');
    if (!match) return undefined;
    const digest = sha256(match[1] as string);
    let found: Principal | undefined;
    for (const entry of this.entries) if (timingSafeEqual(entry.digest, digest)) found = entry.principal;
    return found;
  }
}
