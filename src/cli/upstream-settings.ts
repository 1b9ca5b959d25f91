import { readFileSync } from 'node:fs';

import { TasksError } from '../core/errors.js';
import { resolveLimits } from '../core/limits.js';
import type { UpstreamGateway } from '../upstream/gateway.js';
import { describeUpstream } from '../upstream/spec.js';
import { type ResolvedSettings, settingsDigestOf } from './settings.js';
import { StartupError, UsageError } from './usage-error.js';

/**
 * The upstreams of `serve` and `worker` (issue 28, `--upstream`): connected after the shared settings are resolved,
 * their tools added to the settings. The upstream code (and the SDK client it loads) is imported only when an
 * upstream is configured.
 */

/** Longest wait for an upstream's first `initialize` and `tools/list` at start (ms): `npx` may install it first. */
const UPSTREAM_START_TIMEOUT_MS = 120_000;

/**
 * Connect the configured upstreams (issue 28) and add their tools to `settings` (its settings digest too, so every
 * process of a deployment must list the same upstream tools): `serve` and `worker` call it after
 * {@link resolveSettings}, before the pins are checked and the executor starts. Without upstreams it returns
 * `settings` as it is and loads no upstream code (the SDK client is imported only here, on use).
 * @throws StartupError (exit 1) naming an upstream that cannot be started; UsageError (exit 64) for an
 *   `upstreamTools` rule that names no upstream tool or an upstream tool whose name a tool source took already.
 */
export async function startConfiguredUpstreams(settings: ResolvedSettings): Promise<{ settings: ResolvedSettings; gateway: UpstreamGateway | undefined }> {
  if (settings.upstreams.length === 0) {
    if (Object.keys(settings.upstreamRules).length > 0) throw new UsageError('upstreamTools is set, but no --upstream is configured');
    return { settings, gateway: undefined };
  }
  const { startUpstreams } = await import('../upstream/gateway.js');
  const gateway = await startUpstreams(settings.upstreams, {
    rules: settings.upstreamRules,
    logger: settings.logger,
    clientVersion: (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version,
    maxResultBytes: resolveLimits(settings.limits).maxStoredResultBytes,
    timeoutMs: UPSTREAM_START_TIMEOUT_MS,
  }).catch((error: unknown) => {
    // A coded error is the configuration's (a rule naming no tool); anything else, an upstream that did not start.
    const message = error instanceof Error ? error.message : String(error);
    throw error instanceof TasksError ? new UsageError(message) : new StartupError(message);
  });
  const tools = [...settings.tools, ...gateway.tools];
  const taken = gateway.tools.filter((tool) => settings.tools.some((own) => own.name === tool.name)).map((tool) => tool.name);
  if (taken.length > 0) {
    await gateway.close();
    throw new UsageError(`upstream tools named like tools of this server: ${taken.join(', ')}; give the upstream another name`);
  }
  const withUpstreams = { ...settings, tools };
  return { settings: { ...withUpstreams, settingsDigest: settingsDigestOf(withUpstreams) }, gateway };
}

/** The banner lines of the upstreams (`  upstream: <name> (…): N tools, ready`), or `''` without upstreams. */
export function upstreamLines(settings: Pick<ResolvedSettings, 'upstreams'>, gateway: UpstreamGateway | undefined): string {
  if (!gateway) return '';
  const statuses = gateway.statuses();
  return settings.upstreams
    .map((spec, index) => `  upstream: ${describeUpstream(spec)}: ${statuses[index]?.tools ?? 0} tools, ${statuses[index]?.state ?? 'unknown'}\n`)
    .join('');
}
