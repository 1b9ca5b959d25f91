/**
 * The two HTML documents the dashboard serves. Neither carries a script of its own (the Content-Security-Policy
 * allows only `/dashboard/assets/app.js`); every interpolated value goes through {@link escapeHtml}.
 */

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

function documentOf(title: string, body: string, withScript: boolean): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="/dashboard/assets/app.css">
${withScript ? '<script type="module" src="/dashboard/assets/app.js"></script>\n' : ''}</head>
<body>
${body}
</body>
</html>
`;
}

/** The application shell: the script renders the list or a task page into `<main>` from the URL. */
export function appShell(): string {
  return documentOf(
    'mcp-tasks dashboard',
    `<a class="skip" href="#main">Skip to content</a>
<header class="top"><a class="brand" href="/dashboard">mcp-tasks</a><span id="who" class="who"></span><span id="live" class="live" role="status" aria-live="polite"></span><button id="logout" type="button" hidden>Sign out</button></header>
<main id="main" tabindex="-1"><p>Loading…</p><noscript>The dashboard needs JavaScript.</noscript></main>`,
    true,
  );
}

/** The sign-in page of token-file mode (a form posting the bearer token; `error` shown when the last try failed). */
export function loginPage(error?: string): string {
  return documentOf(
    'Sign in · mcp-tasks',
    `<main id="main" class="login">
<h1>Sign in to mcp-tasks</h1>
<form method="post" action="/dashboard/login">
<label for="token">Bearer token</label>
<input id="token" name="token" type="password" autocomplete="off" required autofocus>
${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>\n` : ''}<button type="submit">Sign in</button>
</form>
<p class="hint">Use a token from the server's token file. It is kept on the server; the browser holds only a session cookie.</p>
</main>`,
    false,
  );
}
