/**
 * The network probes of `check_infrastructure`: an HTTP(S) request (status, latency to the response headers, the
 * server's TLS certificate and whether it is trusted) and a TCP connect (latency). Each has its own timeout,
 * follows no redirect, reads no body, keeps no connection, and stops at once when the call is cancelled.
 */
import { type IncomingMessage, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect, isIP } from 'node:net';
import type { PeerCertificate, TLSSocket } from 'node:tls';

/** What the TLS handshake showed. */
export type TlsFacts = {
  subject: string;
  issuer: string;
  /** ISO 8601. */
  validFrom: string;
  validTo: string;
  /** Whole days from the check to `validTo` (negative once expired). */
  daysLeft: number;
  /** Verified against the system CAs (or the target's `ca`) for the host name. */
  trusted: boolean;
  /** Why it is not trusted (`SELF_SIGNED_CERT_IN_CHAIN`, `CERT_HAS_EXPIRED`, `ERR_TLS_CERT_ALTNAME_INVALID` …). */
  trustError: string | null;
};

/** The outcome of one probe. */
export interface ProbeResult {
  /** Connected (and for HTTP, answered). */
  reached: boolean;
  latencyMs: number | null;
  httpStatus: number | null;
  tls: TlsFacts | null;
  /** Why it was not reached (`ECONNREFUSED`, `timed out after 2000 ms` …). */
  error: string | null;
}

/** Where and how to probe. */
export interface ProbeOptions {
  /** Connect here instead of resolving the host again (an address the target policy vetted). */
  address: string | null;
  timeoutMs: number;
  signal: AbortSignal;
  /** Extra CA certificates (PEM) to trust for HTTPS. */
  ca?: string;
  /** Epoch ms of the check (for `daysLeft`). */
  now: number;
}

const DAY_MS = 86_400_000;

function describe(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}

function name(entity: PeerCertificate['subject'] | undefined): string {
  if (!entity) return '';
  return Object.entries(entity)
    .map(([key, value]) => `${key}=${Array.isArray(value) ? value.join('+') : value}`)
    .join(', ');
}

function tlsFacts(socket: TLSSocket, now: number): TlsFacts | null {
  const certificate = socket.getPeerCertificate();
  if (!certificate || Object.keys(certificate).length === 0) return null;
  const validTo = new Date(certificate.valid_to);
  return {
    subject: name(certificate.subject),
    issuer: name(certificate.issuer),
    validFrom: new Date(certificate.valid_from).toISOString(),
    validTo: validTo.toISOString(),
    daysLeft: Math.floor((validTo.getTime() - now) / DAY_MS),
    trusted: socket.authorized,
    trustError: socket.authorized ? null : String(socket.authorizationError ?? 'not verified'),
  };
}

/** A `lookup` that answers with the vetted address, so the connection goes where the policy allowed. */
function pinned(address: string) {
  const family = isIP(address);
  return (_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

/** GET (or HEAD) `url`; see the module comment. Never throws: failures are in the result. */
export function probeHttp(url: URL, method: 'GET' | 'HEAD', options: ProbeOptions): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const started = performance.now();
    let settled = false;
    const finish = (result: ProbeResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      request.destroy();
      resolve(result);
    };
    const failed = (error: string): ProbeResult => ({ reached: false, latencyMs: null, httpStatus: null, tls: null, error });
    const secure = url.protocol === 'https:';
    const send = secure ? httpsRequest : httpRequest;
    const request = send(url, {
      method,
      agent: false,
      headers: { 'user-agent': 'mcp-tasks check_infrastructure', connection: 'close' },
      ...(options.address ? { lookup: pinned(options.address) as never } : {}),
      ...(secure
        ? {
            // Verified below from the socket, so that an untrusted or expired certificate is still described.
            rejectUnauthorized: false,
            ...(options.ca ? { ca: options.ca } : {}),
            ...(isIP(url.hostname.replace(/^\[|\]$/g, '')) === 0 ? { servername: url.hostname } : {}),
          }
        : {}),
    });
    const timer = setTimeout(() => finish(failed(`timed out after ${options.timeoutMs} ms`)), options.timeoutMs);
    const onAbort = () => finish(failed('cancelled'));
    options.signal.addEventListener('abort', onAbort, { once: true });
    request.on('response', (response: IncomingMessage) => {
      const latencyMs = Math.round(performance.now() - started);
      const tls = secure ? tlsFacts(response.socket as TLSSocket, options.now) : null;
      response.destroy();
      finish({ reached: true, latencyMs, httpStatus: response.statusCode ?? null, tls, error: null });
    });
    request.on('error', (error) => finish(failed(describe(error))));
    request.end();
  });
}

/** Connects to `host:port`; see the module comment. Never throws: failures are in the result. */
export function probeTcp(host: string, port: number, options: ProbeOptions): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const started = performance.now();
    let settled = false;
    const socket = connect({ host: options.address ?? host, port });
    const finish = (result: ProbeResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(result);
    };
    const failed = (error: string): ProbeResult => ({ reached: false, latencyMs: null, httpStatus: null, tls: null, error });
    const timer = setTimeout(() => finish(failed(`timed out after ${options.timeoutMs} ms`)), options.timeoutMs);
    const onAbort = () => finish(failed('cancelled'));
    options.signal.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', () => finish({ reached: true, latencyMs: Math.round(performance.now() - started), httpStatus: null, tls: null, error: null }));
    socket.once('error', (error) => finish(failed(describe(error))));
  });
}
