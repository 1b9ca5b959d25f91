// Runs inside `unshare -n` (a network namespace with only loopback, brought up here) for test/long/claude-code.test.ts:
// our `serve` (dist/), a recording proxy in front of it, the scripted Messages API stub, and Claude Code itself —
// `-p`, or the interactive CLI through a pseudo-terminal (`script` from util-linux). Prints one JSON line: what the
// stub received (the model's view) and what went through the proxy (the MCP exchange).
// Usage: node claude-code-runner.mjs '<json: {claude, mode, prompt, script, serveArgs, timeoutMs}>'
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { startMessagesStub } from './claude-code-stub.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const config = JSON.parse(process.argv[2]);
execFileSync('ip', ['link', 'set', 'lo', 'up']);

const home = mkdtempSync(join(tmpdir(), 'mcp-tasks-claude-home-'));
const work = join(home, 'work');
mkdirSync(work);
const children = [];
const exchanges = [];

function freePort() {
  return new Promise((done) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => done(port));
    });
  });
}

async function startServe() {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [join(ROOT, 'dist/cli/main.js'), 'serve', '--port', String(port), '--data-dir', join(home, 'data'), '--log-level', 'warn', ...config.serveArgs],
    {
      stdio: ['ignore', 'ignore', 'ignore'],
      env: { ...process.env, MCP_TASKS_INLINE_GRACE_MS: String(config.inlineGraceMs ?? 1000) },
    },
  );
  children.push(child);
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const status = await new Promise((done) => {
      const probe = httpRequest({ host: '127.0.0.1', port, path: '/readyz' }, (response) => {
        response.resume();
        done(response.statusCode);
      });
      probe.on('error', () => done(0));
      probe.end();
    });
    if (status === 200) return port;
    await new Promise((done) => setTimeout(done, 100));
  }
  throw new Error('serve did not become ready');
}

/** A proxy that records each MCP POST and the raw answer (JSON or SSE) it got. */
async function startProxy(upstream) {
  const server = createServer((incoming, outgoing) => {
    const chunks = [];
    incoming.on('data', (chunk) => chunks.push(chunk));
    incoming.on('end', () => {
      const body = Buffer.concat(chunks);
      const record = { method: incoming.method, requestBody: body.toString('utf8'), status: 0, contentType: '', responseBody: '' };
      exchanges.push(record);
      const forward = httpRequest({ host: '127.0.0.1', port: upstream, path: incoming.url, method: incoming.method, headers: incoming.headers }, (answer) => {
        record.status = answer.statusCode;
        record.contentType = String(answer.headers['content-type'] ?? '');
        outgoing.writeHead(answer.statusCode, answer.headers);
        answer.on('data', (chunk) => {
          if (record.responseBody.length < 200_000) record.responseBody += chunk.toString('utf8');
          outgoing.write(chunk);
        });
        answer.on('end', () => outgoing.end());
      });
      forward.on('error', () => outgoing.destroy());
      forward.end(body);
    });
  });
  await new Promise((done) => server.listen(0, '127.0.0.1', done));
  return { port: server.address().port, close: () => server.close() };
}

const port = await startServe();
const proxy = await startProxy(port);
const stub = await startMessagesStub(config.script);
const mcpConfig = join(home, 'mcp.json');
writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { tasks: { type: 'http', url: `http://127.0.0.1:${proxy.port}/mcp` } } }));
const apiKey = 'sk-ant-test-00000000000000000000000000000000';
// A fresh HOME that has been through onboarding, trusts the work folder and accepts the dummy key.
writeFileSync(
  join(home, '.claude.json'),
  JSON.stringify({
    hasCompletedOnboarding: true,
    theme: 'dark',
    customApiKeyResponses: { approved: [apiKey.slice(-20)], rejected: [] },
    projects: { [work]: { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true, allowedTools: [] } },
  }),
);
const env = {
  PATH: process.env.PATH,
  HOME: home,
  TERM: 'xterm-256color',
  ANTHROPIC_BASE_URL: stub.url,
  ANTHROPIC_API_KEY: apiKey,
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  DISABLE_TELEMETRY: '1',
  DISABLE_AUTOUPDATER: '1',
  ...(config.env ?? {}),
};
const args = ['--mcp-config', mcpConfig, '--strict-mcp-config', '--allowedTools', 'mcp__tasks'];
let child;
if (config.mode === 'print') {
  child = spawn(config.claude, ['-p', config.prompt, ...args], { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'] });
} else {
  // The interactive CLI needs a terminal: `script` gives it a pseudo-terminal; its input stays open (a pipe).
  const quoted = [config.claude, config.prompt, ...args].map((arg) => `'${String(arg).replaceAll("'", "'\\''")}'`).join(' ');
  child = spawn('script', ['-q', '-f', '-e', '-c', quoted, '/dev/null'], {
    cwd: work,
    env: { ...env, COLUMNS: '120', LINES: '40' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}
children.push(child);
let output = '';
child.stdout.on('data', (chunk) => (output = (output + chunk).slice(-20_000)));
child.stderr.on('data', (chunk) => (output = (output + chunk).slice(-20_000)));
const ended = new Promise((done) => child.on('exit', (code, signal) => done({ code, signal })));

// The interactive CLI never exits by itself: stop when the stub has answered the turn that follows the result.
const deadline = Date.now() + (config.timeoutMs ?? 120_000);
let exit;
for (;;) {
  exit = await Promise.race([ended, new Promise((done) => setTimeout(() => done(undefined), 250))]);
  if (exit) break;
  if (config.mode !== 'print' && config.until && stub.received.some((entry) => JSON.stringify(entry.body).includes(config.until))) {
    await new Promise((done) => setTimeout(done, 500));
    break;
  }
  if (Date.now() > deadline) break;
}
for (const one of children) one.kill('SIGKILL');
proxy.close();
await stub.close();
process.stdout.write(
  `${JSON.stringify({
    exit: exit ?? 'stopped',
    // Terminal escape sequences (ESC [ … letter) removed, so the tail reads as text in a failure message.
    output: output.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;?]*[A-Za-z]`, 'g'), '').slice(-4000),
    messages: stub.received
      .filter((entry) => entry.url?.startsWith('/v1/messages'))
      .map((entry) => ({ tools: (entry.body.tools ?? []).map((tool) => tool.name), messages: entry.body.messages ?? [] })),
    exchanges,
  })}\n`,
);
try {
  rmSync(home, { recursive: true, force: true, maxRetries: 5 });
} catch {
  // A killed child may still be writing there; it is a temporary folder.
}
process.exit(0);
