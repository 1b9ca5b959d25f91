/**
 * The {@link CapabilityManifest} of one connection, built once per session epoch from one `tools/list`, with the
 * listed tools it was built from. The router's decisions and the local-path arguments read the same listing, so a
 * call is never routed by one `tools/list` and prepared by another.
 */
import { LOCAL_PATH_SCHEMA_KEY } from '../protocol/constants.js';
import { buildCapabilityManifest, type CapabilityManifest } from '../protocol/manifest.js';
import type { ListedTool, McpSession } from './session.js';

/** The manifest and the tool listing of a session, per epoch (a lost 2025-11-25 session re-initialised is a new epoch). */
export class ManifestCache {
  private manifestCache: { epoch: number; manifest: Promise<CapabilityManifest> } | undefined;
  /** The `tools/list` answer the manifest of that session epoch was built from. */
  private toolsCache: { epoch: number; tools: Promise<ListedTool[]> } | undefined;

  constructor(private readonly session: McpSession) {}

  /**
   * The manifest of the session's current epoch: one `tools/list` per epoch; a failed build is forgotten, so the
   * next call tries again.
   * @throws TasksConnectionError / TasksProtocolError when `tools/list` fails.
   */
  manifest(): Promise<CapabilityManifest> {
    const epoch = this.session.epoch;
    if (this.manifestCache?.epoch !== epoch) {
      const listed = this.session.listTools();
      this.toolsCache = { epoch, tools: listed };
      const manifest = listed.then((tools) =>
        buildCapabilityManifest({
          protocolVersion: this.session.protocolVersion,
          capabilities: this.session.serverCapabilities,
          serverInfo: this.session.serverInfo,
          session:
            this.session.generation === 'v2'
              ? { kind: 'discover', at: new Date(this.session.establishedAt).toISOString() }
              : { kind: 'initialize', sessionId: this.session.sessionId ?? null, at: new Date(this.session.establishedAt).toISOString() },
          tools,
        }),
      );
      manifest.catch(() => {
        if (this.manifestCache?.manifest === manifest) this.manifestCache = undefined;
      });
      this.manifestCache = { epoch, manifest };
    }
    return this.manifestCache.manifest;
  }

  /** Forget the manifest, so the next {@link manifest} lists the tools again (after a new `server/discover`). */
  invalidate(): void {
    this.manifestCache = undefined;
  }

  /**
   * The top-level arguments `tool` declares as local paths (`"x-mcp-tasks-local-path": true` on the property in its
   * `inputSchema`), from the listing of the current manifest; `[]` for a tool not listed.
   * @throws TasksConnectionError / TasksProtocolError when `tools/list` fails.
   */
  async localPathArguments(tool: string): Promise<string[]> {
    await this.manifest();
    const listed = (await this.toolsCache?.tools)?.find((candidate) => candidate.name === tool);
    return Object.entries(listed?.inputSchema?.properties ?? {})
      .filter(([, property]) => typeof property === 'object' && property !== null && (property as Record<string, unknown>)[LOCAL_PATH_SCHEMA_KEY] === true)
      .map(([name]) => name);
  }
}
