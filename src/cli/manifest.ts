import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { type CapabilityManifest, connectTasksClient } from '../client/index.js';
import { V1_PROTOCOL_VERSION, V2_PROTOCOL_VERSION } from '../protocol/constants.js';
import { TASK_SCOPES } from '../protocol/scopes.js';
import { createTasksServer } from '../server/create-tasks-server.js';
import { openSqliteTaskStore } from '../store/sqlite/index.js';
import type { ResolvedConfig } from './config/resolve.js';
import { describeManifest } from './inspect.js';
import { writeJson } from './json-output.js';
import { listen } from './serve.js';
import { resolveSettings } from './settings.js';

/** The session evidence of a manifest taken from no live session (epoch time, no session id), so two runs diff clean. */
const OFFLINE_AT = new Date(0).toISOString();

/**
 * The capability manifests a server with this configuration advertises, one per generation (v1 = a 2025-11-25
 * session, v2 = 2026-07-28 `server/discover`). Not computed from a copy of the server's rules: a server with the
 * configured tools and authentication mode is started on loopback with a throw-away SQLite store and no worker,
 * and read by the same requestor code as `mcp-tasks inspect` — so this equals what `inspect --json` sees of a live
 * server, except for the session evidence (epoch time, no session id).
 */
export async function buildServedManifests(resolved: ResolvedConfig): Promise<CapabilityManifest[]> {
  const settings = await resolveSettings(resolved);
  const directory = mkdtempSync(join(tmpdir(), 'mcp-tasks-manifest-'));
  const store = await openSqliteTaskStore({ path: join(directory, 'tasks.db') });
  const authEnabled = resolved.config.auth !== undefined;
  const server = await createTasksServer({
    tools: settings.tools,
    store,
    secret: randomBytes(32),
    // With authentication configured the manifest shows the authenticated capabilities (e.g. v1 tasks/list, R51).
    ...(authEnabled ? { auth: { verify: async () => ({ issuer: 'manifest', subject: 'manifest', tenant: 'manifest', scopes: [...TASK_SCOPES] }) } } : {}),
    limits: settings.limits,
    worker: false,
    sweeper: false,
  });
  const http = createServer((request, response) => void server.handleHttp(request, response));
  try {
    const port = await listen(http, 0, '127.0.0.1');
    const manifests: CapabilityManifest[] = [];
    for (const protocol of [V1_PROTOCOL_VERSION, V2_PROTOCOL_VERSION] as const) {
      const client = await connectTasksClient({
        url: `http://127.0.0.1:${port}/mcp`,
        protocol,
        journal: false,
        clientInfo: { name: 'mcp-tasks-manifest', version: '0.1.0' },
        ...(authEnabled ? { token: 'manifest' } : {}),
      });
      try {
        const manifest = await client.manifest();
        manifests.push({
          ...manifest,
          session: manifest.session.kind === 'initialize' ? { kind: 'initialize', sessionId: null, at: OFFLINE_AT } : { kind: 'discover', at: OFFLINE_AT },
        });
      } finally {
        await client.close();
      }
    }
    return manifests;
  } finally {
    http.closeAllConnections();
    http.close();
    await server.close();
    await store.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

/** `mcp-tasks manifest`: the manifests of {@link buildServedManifests}, as JSON (`--json`, an array) or tables, with the pins' owner/contact. */
export async function manifestCommand(resolved: ResolvedConfig, json: boolean): Promise<void> {
  const manifests = await buildServedManifests(resolved);
  if (json) {
    writeJson(manifests);
    return;
  }
  const pins = resolved.config.pins;
  const owner = pins?.owner || pins?.contact ? `owner    ${pins.owner ?? '(none)'}${pins.contact ? ` <${pins.contact}>` : ''}\n` : '';
  process.stdout.write(owner + manifests.map((manifest) => describeManifest(manifest, '(this configuration)')).join('\n'));
}
