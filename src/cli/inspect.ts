import type { CapabilityManifest } from '../client/index.js';
import { remoteLine } from '../client/remote-text.js';
import { jsonDocument } from './json-output.js';
import { openClient, reportFailure, type RequestorFlags, resolveTarget } from './requestor.js';
import { ExitCode } from './usage-error.js';

/**
 * `mcp-tasks inspect`: connect, build the {@link CapabilityManifest} of the connection (one `tools/list`) and print
 * it — as JSON (`--json`, the same type the server's `manifest` command prints, so the two can be diffed) or as a
 * table. Exit 0, or 5 when the server cannot be reached.
 */
export async function inspectCommand(flags: RequestorFlags): Promise<void> {
  const target = await resolveTarget(flags);
  try {
    const client = await openClient({ ...target }, flags, target.protocol, undefined, false);
    try {
      const manifest = await client.manifest();
      process.stdout.write(flags.json ? jsonDocument(manifest) : describeManifest(manifest, client.url));
      process.exitCode = ExitCode.completed;
    } finally {
      await client.close();
    }
  } catch (error) {
    process.exitCode = reportFailure(error, flags);
  }
}

/** The manifest as an aligned table; what the server named (itself, its version, its tools) as {@link remoteLine}s. */
export function describeManifest(manifest: CapabilityManifest, url: string): string {
  const session =
    manifest.session.kind === 'initialize'
      ? `initialize at ${manifest.session.at}${manifest.session.sessionId ? `, session ${manifest.session.sessionId}` : ''}`
      : `server/discover at ${manifest.session.at}`;
  const rows: Array<[string, string]> = [
    ['server', `${manifest.server ? remoteLine(`${manifest.server.name} ${manifest.server.version}`) : '(no serverInfo)'} at ${url}`],
    ['protocol', `MCP ${manifest.protocolVersion}, ${manifest.generation ? `tasks ${manifest.generation}` : 'no tasks'}`],
    ['session', session],
    ['digest', manifest.capabilitiesDigest],
    ['tasks', manifest.taskOperations.length > 0 ? manifest.taskOperations.join(', ') : 'none'],
    ['keys', manifest.idempotencyKeys ? 'idempotency keys honoured (dev.mcp-tasks/idempotency)' : 'idempotency keys not declared: a lost call is never resent'],
    ['tools', String(manifest.tools.length)],
  ];
  const names = manifest.tools.map((tool) => remoteLine(tool.name, 200));
  const width = Math.max(0, ...names.map((name) => name.length));
  const lines = rows.map(([key, value]) => `${key.padEnd(9)}${value}`);
  manifest.tools.forEach((tool, index) => lines.push(`  ${(names[index] as string).padEnd(width)}  ${tool.taskMode}`));
  return `${lines.join('\n')}\n`;
}
