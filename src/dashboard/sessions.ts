import { randomBytes, timingSafeEqual } from 'node:crypto';

/** One signed-in browser. The token stays on the server, so every request re-verifies it (revocation, expiry). */
interface Session {
  token: string;
  /** Sent back by the page in a header on every state-changing request (with SameSite=Strict: CSRF-safe twice). */
  csrf: string;
  /** Epoch ms. */
  expiresAt: number;
}

/** Name of the session cookie (HttpOnly, SameSite=Strict, Path=/dashboard). */
export const SESSION_COOKIE = 'mcp_tasks_session';

/** 128 random bits, base64url. */
function randomId(): string {
  return randomBytes(16).toString('base64url');
}

/**
 * The dashboard's sessions, in this process's memory: a session id (128 random bits, the cookie's value) maps to
 * the token it was opened with. A restart signs everybody out, which is the safe direction. Bounded: the oldest
 * sessions are dropped past `maxSessions`.
 */
export class DashboardSessions {
  private readonly sessions = new Map<string, Session>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxSessions = 10_000,
  ) {}

  /** Open a session for a token already verified; returns the cookie value and the CSRF token. */
  open(token: string, now: number): { id: string; csrf: string } {
    this.prune(now);
    while (this.sessions.size >= this.maxSessions) this.sessions.delete(this.sessions.keys().next().value as string);
    const id = randomId();
    const csrf = randomId();
    this.sessions.set(id, { token, csrf, expiresAt: now + this.ttlMs });
    return { id, csrf };
  }

  /** The live session of a cookie value, or `undefined`. */
  find(id: string | undefined, now: number): { token: string; csrf: string } | undefined {
    if (id === undefined) return undefined;
    const session = this.sessions.get(id);
    if (!session) return undefined;
    if (session.expiresAt <= now) {
      this.sessions.delete(id);
      return undefined;
    }
    return session;
  }

  close(id: string | undefined): void {
    if (id !== undefined) this.sessions.delete(id);
  }

  private prune(now: number): void {
    for (const [id, session] of this.sessions) if (session.expiresAt <= now) this.sessions.delete(id);
  }
}

/** Constant-time comparison of two CSRF tokens (`false` for a missing one). */
export function sameToken(expected: string, given: string | undefined): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A process-wide CSRF token for the unauthenticated (loopback, anonymous) mode, where there is no session. */
export function processCsrfToken(): string {
  return randomId();
}

/** The value of one cookie in a `Cookie` header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return rest.join('=');
  }
  return undefined;
}
