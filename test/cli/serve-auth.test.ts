/**
 * `mcp-tasks serve` authentication as an operator runs it (issue 10 §1): the token file reloaded on change and on
 * SIGHUP (a broken file keeps the old tokens), `--auth jwt` with discovery against a real oidc-provider, tool
 * scopes, and the usage errors of inconsistent flags.
 */
import { spawnSync } from 'node:child_process';
import { renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TestAuthorizationServer, type TestClient } from '../helpers/authorization-server.js';
import { freePort, type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const TOKEN_A = 'reload-token-a-0123456789';
const TOKEN_B = 'reload-token-b-0123456789';

async function statusWith(url: string, token: string): Promise<number> {
  return (await postModern(url, 'tools/list', {}, { token })).status;
}

async function eventually(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 50));
  }
}

/** Write `content` to `file` the way editors and secret mounts do: a new file renamed over the old one. */
function replaceFile(file: string, content: string): void {
  writeFileSync(`${file}.tmp`, content);
  renameSync(`${file}.tmp`, file);
}

const entry = (token: string, subject: string, scopes?: string[]) => ({
  token,
  issuer: 'https://tokens.test',
  subject,
  tenant: 't',
  ...(scopes ? { scopes } : {}),
});

describe('serve --auth tokens:<file>: reload on change and on SIGHUP', () => {
  const temp = makeTempDir('mcp-tasks-reload-');
  const file = join(temp.dir, 'tokens.json');
  let server: ServerProcess;

  beforeAll(async () => {
    writeFileSync(file, JSON.stringify({ tokens: [entry(TOKEN_A, 'alice')] }));
    server = await startServerProcess(join(temp.dir, 'data'), ['--auth', `tokens:${file}`, '--log-level', 'info']);
  });
  afterAll(async () => {
    await server?.stop();
    temp.remove();
  });

  it('a token added to the file works within the debounce, a removed one is refused; secrets never reach the log', async () => {
    expect(await statusWith(server.url, TOKEN_A)).toBe(200);
    expect(await statusWith(server.url, TOKEN_B)).toBe(401);
    replaceFile(file, JSON.stringify({ tokens: [entry(TOKEN_A, 'alice'), entry(TOKEN_B, 'bob')] }));
    await eventually(async () => (await statusWith(server.url, TOKEN_B)) === 200, 'the added token');
    replaceFile(file, JSON.stringify({ tokens: [entry(TOKEN_B, 'bob')] }));
    await eventually(async () => (await statusWith(server.url, TOKEN_A)) === 401, 'the removed token to be refused');
    await server.logLine(/token file reloaded/);
    expect(server.log()).not.toContain(TOKEN_A);
    expect(server.log()).not.toContain(TOKEN_B);
  });

  it('an invalid new file keeps the previous tokens in force and is logged as an error', async () => {
    const before = server.log().length;
    replaceFile(file, '{"tokens": [ this is not json');
    await eventually(async () => server.log().slice(before).includes('token file not reloaded'), 'the refusal in the log');
    expect(await statusWith(server.url, TOKEN_B)).toBe(200);
    replaceFile(file, JSON.stringify({ tokens: [{ token: 'short', issuer: 'i', subject: 's', tenant: 't' }] }));
    await eventually(
      async () =>
        (
          server
            .log()
            .slice(before)
            .match(/token file not reloaded/g) ?? []
        ).length >= 2,
      'the second refusal',
    );
    expect(await statusWith(server.url, TOKEN_B)).toBe(200);
    expect(server.child.exitCode).toBeNull();
  });

  it('SIGHUP re-reads the file (and does not end the process)', async () => {
    replaceFile(file, JSON.stringify({ tokens: [entry(TOKEN_A, 'alice'), entry(TOKEN_B, 'bob')] }));
    server.child.kill('SIGHUP');
    await eventually(async () => (await statusWith(server.url, TOKEN_A)) === 200, 'the token after SIGHUP');
    server.child.kill('SIGHUP');
    await new Promise((resolveWait) => setTimeout(resolveWait, 300));
    expect(server.child.exitCode).toBeNull();
    expect(await statusWith(server.url, TOKEN_B)).toBe(200);
  });

  it('scopes in the file: an entry with only tasks:read cannot cancel (403); an entry without scopes can', async () => {
    replaceFile(file, JSON.stringify({ tokens: [entry(TOKEN_A, 'alice', ['tasks:read']), entry(TOKEN_B, 'bob')] }));
    await eventually(async () => (await postModern(server.url, 'tasks/cancel', { taskId: 'x' }, { token: TOKEN_A })).status === 403, 'the scoped entry');
    const cancel = await postModern(server.url, 'tasks/cancel', { taskId: 'Zz9Yy8Xx7Ww6Vv5Uu4Tt3S' }, { token: TOKEN_B });
    expect(cancel.status).toBe(200);
    expect(cancel.body.error?.code).toBe(-32602);
  });
});

describe('serve --auth jwt against oidc-provider (discovery, tool scopes)', () => {
  const client: TestClient = {
    clientId: 'svc',
    secret: 'svc-secret-0123456789abcdef0123456789ab',
    tenant: 'acme',
    scope: 'tasks:read tasks:cancel tasks:answer logs:read',
  };
  const temp = makeTempDir('mcp-tasks-jwt-cli-');
  let issuer: TestAuthorizationServer;
  let server: ServerProcess;
  let resource: string;

  beforeAll(async () => {
    issuer = await TestAuthorizationServer.start({ clients: [client] });
    const port = await freePort();
    resource = `http://127.0.0.1:${port}/mcp`;
    server = await startServerProcess(
      temp.dir,
      [
        '--auth',
        'jwt',
        '--issuer',
        issuer.issuer,
        '--audience',
        resource,
        '--tool-scope',
        'slow_compute=logs:read',
        '--fixtures',
        'conformance',
        '--log-level',
        'info',
      ],
      {},
      port,
    );
  });
  afterAll(async () => {
    await server?.stop();
    await issuer?.close();
    temp.remove();
  });

  it('discovers the keys, refuses a missing token with resource_metadata and enforces the tool scope', async () => {
    expect(server.url).toBe(resource);
    const missing = await postModern(server.url, 'tools/list');
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toContain(
      `resource_metadata="http://127.0.0.1:${new URL(resource).port}/.well-known/oauth-protected-resource/mcp"`,
    );
    const withoutTool = await issuer.token(client, { resource, scope: 'tasks:read' });
    const refused = await postModern(server.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } }, { token: withoutTool });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('www-authenticate')).toContain('scope="logs:read"');
    const full = await issuer.token(client, { resource, scope: 'tasks:read logs:read' });
    const created = await postModern(server.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } }, { token: full });
    expect(created.body.result?.resultType).toBe('task');
    expect((await pollModernTask(server.url, String(created.body.result?.taskId), { token: full })).status).toBe('completed');
    expect(server.log()).toContain(`JWT access tokens of ${issuer.issuer} for ${resource}`);
    expect(server.log()).toContain('slow_compute needs logs:read');
  });
});

describe('serve authentication flags that do not fit together are usage errors (exit 64)', () => {
  function serve(args: string[]): { status: number | null; stderr: string } {
    const temp = makeTempDir();
    try {
      const result = spawnSync(process.execPath, [MAIN, 'serve', '--data-dir', temp.dir, '--port', '0', ...args], { encoding: 'utf8', timeout: 20_000 });
      return { status: result.status, stderr: result.stderr };
    } finally {
      temp.remove();
    }
  }

  it.each([
    [['--auth', 'jwt'], /--auth jwt needs --issuer/],
    [['--auth', 'jwt', '--issuer', 'https://as.example', '--audience', 'not a url'], /--audience not a url: expected an absolute http\(s\) URL/],
    [['--issuer', 'https://as.example'], /--issuer need --auth jwt/],
    [['--tool-scope', 'analyze_logs=logs:read'], /--tool-scope needs --auth/],
    [
      [
        '--auth',
        'jwt',
        '--issuer',
        'https://as.example',
        '--audience',
        'https://mcp.example/mcp',
        '--jwks-url',
        'https://as.example/jwks',
        '--tool-scope',
        'no_such_tool=x:y',
      ],
      /--tool-scope names no served tool: no_such_tool/,
    ],
    [
      [
        '--auth',
        'jwt',
        '--issuer',
        'https://as.example',
        '--audience',
        'https://mcp.example/mcp',
        '--jwks-url',
        'https://as.example/jwks',
        '--tool-scope',
        'analyze_logs',
      ],
      /invalid --tool-scope "analyze_logs"/,
    ],
    [['--stdio', '--auth', 'jwt', '--issuer', 'https://as.example', '--audience', 'https://mcp.example/mcp'], /--auth does not apply to --stdio/],
  ])('%j', (args, message) => {
    const result = serve(args);
    expect(result.status).toBe(64);
    expect(result.stderr).toMatch(message);
  });

  it('an issuer whose metadata cannot be fetched ends serve with exit 1 and names the URLs tried', async () => {
    const port = await freePort();
    const result = serve(['--auth', 'jwt', '--issuer', `http://127.0.0.1:${port}`, '--audience', 'http://127.0.0.1:1/mcp']);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(`cannot discover the authorization server http://127\\.0\\.0\\.1:${port}.*oauth-authorization-server.*openid-configuration`),
    );
  });
});
