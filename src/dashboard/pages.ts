/**
 * The HTML documents the dashboard serves. None carries a script of its own (the Content-Security-Policy allows
 * only `/dashboard/assets/app.js`; the shell's JSON data block is never run); every interpolated value goes through
 * {@link escapeHtml} or {@link jsonDataBlock}.
 */

import type { InitialView } from './wire.js';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escape text for an HTML text node or a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char] as string);
}

/**
 * The strict policy of every dashboard response: scripts and styles from this origin only (no inline code, no
 * eval), fetch/SSE to this origin, forms posting to this origin, never framed.
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/**
 * The page icon, inline (`img-src data:` allows it): without one every browser asks for `/favicon.ico`, outside the
 * dashboard's paths, and logs a 404 (issue 26 item 16).
 */
const FAVICON =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Crect width='16' height='16' rx='3' fill='%232d4a6b'/%3E%3Cpath d='M4 8.5l2.5 2.5L12 5' stroke='white' stroke-width='2' fill='none'/%3E%3C/svg%3E";

function documentOf(title: string, body: string, withScript: boolean): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="${FAVICON}">
<link rel="stylesheet" href="/dashboard/assets/app.css">
${withScript ? '<script type="module" src="/dashboard/assets/app.js"></script>\n' : ''}</head>
<body>
${body}
</body>
</html>
`;
}

/**
 * `value` as the text of a `<script type="application/json">` data block: `<`, `>` and `&` as JSON escapes, so no
 * string in it (task statusMessages are untrusted) can end the element or open a comment. A data block is never
 * run, so the CSP (`script-src 'self'`) does not apply to it.
 */
export function jsonDataBlock(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * The application shell: the script renders the list or a task page into `<main>` from the URL, starting from
 * `initial` when given (the data of the first view, so it shows without waiting for a request).
 */
export function appShell(initial?: InitialView): string {
  return documentOf(
    'mcp-tasks dashboard',
    `${initial ? `<script type="application/json" id="initial-data">${jsonDataBlock(initial)}</script>\n` : ''}<a class="skip" href="#main">Skip to content</a>
<header class="top"><a class="brand" href="/dashboard">mcp-tasks</a><nav class="views" aria-label="Views"><a href="/dashboard">Tasks</a><a href="/dashboard/operations">Operations</a><a href="/dashboard/overview">Overview</a></nav><span id="who" class="who"></span><span id="live" class="live" role="status" aria-live="polite"></span><button id="logout" type="button" hidden>Sign out</button></header>
<main id="main" tabindex="-1"><p>Loading…</p><noscript>The dashboard needs JavaScript.</noscript></main>`,
    true,
  );
}

/**
 * The sign-in page. Token-file mode: a form posting the bearer token. JWT mode with a client id: a link that starts
 * the authorization-code flow with PKCE at the issuer, and the token form below it as the fallback (an access token
 * of that issuer pasted by hand). `error` is shown when the last try failed.
 */
export function loginPage(error?: string, options: { issuer?: string } = {}): string {
  const single = options.issuer === undefined;
  return documentOf(
    'Sign in · mcp-tasks',
    `<main id="main" class="login">
<h1>Sign in to mcp-tasks</h1>
${
  error
    ? `<p class="error" role="alert">${escapeHtml(error)}</p>
`
    : ''
}${
      single
        ? ''
        : `<p><a id="sign-in-issuer" class="button" href="/dashboard/login/start">Sign in with ${escapeHtml(options.issuer as string)}</a></p>
<h2>Or paste an access token</h2>
`
    }<form method="post" action="/dashboard/login">
<label for="token">${single ? 'Bearer token' : 'Access token'}</label>
<input id="token" name="token" type="password" autocomplete="off" required${single ? ' autofocus' : ''}>
<button type="submit">Sign in${single ? '' : ' with the token'}</button>
</form>
<p class="hint">${single ? "Use a token from the server's token file." : 'An access token of that issuer for this server.'} It is kept on the server; the browser holds only a session cookie.</p>
</main>`,
    false,
  );
}

/** After a sign-in at the issuer: a same-site step (no script) so the SameSite=Strict session cookie goes with the next request. */
export function signedInPage(): string {
  return documentOf(
    'Signed in · mcp-tasks',
    `<main id="main" class="login"><h1>Signed in</h1><p><a id="continue" href="/dashboard">Continue to the dashboard</a></p></main>`,
    false,
  ).replace('<meta charset="utf-8">', '<meta charset="utf-8">\n<meta http-equiv="refresh" content="0;url=/dashboard">');
}
