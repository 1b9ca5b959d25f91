import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { resolve } from 'node:path';

import { TasksError } from '../core/errors.js';
import { resolveLimits } from '../core/limits.js';
import { isInsideRoots } from '../tools/roots.js';
import type { UpstreamGateway } from '../upstream/gateway.js';
import { describeUpstream, type UpstreamSpec } from '../upstream/spec.js';
import { type DeniedState, realPathOf, type ResolvedSettings, settingsDigestOf } from './settings.js';
import { StartupError, UsageError } from './usage-error.js';

/**
 * The upstreams of `serve` and `worker` (issue 28, `--upstream`): connected after the shared settings are resolved,
 * their tools added to the settings. The upstream code (and the SDK client it loads) is imported only when an
 * upstream is configured.
 */

/**
 * Connect the configured upstreams (issue 28) and add their tools to `settings` (its settings digest too, so every
 * process of a deployment must list the same upstream tools): `serve` and `worker` call it after
 * {@link resolveSettings}, before the pins are checked and the executor starts. Without upstreams it returns
 * `settings` as it is and loads no upstream code (the SDK client is imported only here, on use).
 * @throws StartupError (exit 1) naming an upstream that cannot be started; UsageError (exit 64) for an
 *   `upstreamTools` rule that names no upstream tool or an upstream tool whose name a tool source took already, and
 *   for a stdio upstream given this server's state as an argument (see {@link checkDataDirArguments}).
 */
export async function startConfiguredUpstreams(settings: ResolvedSettings): Promise<{ settings: ResolvedSettings; gateway: UpstreamGateway | undefined }> {
  if (settings.upstreams.length === 0) {
    if (Object.keys(settings.upstreamRules).length > 0) throw new UsageError('upstreamTools is set, but no --upstream is configured');
    if (settings.upstreamsForwardIdentity.length > 0) throw new UsageError('upstreamsForwardIdentity is set, but no --upstream is configured');
    return { settings, gateway: undefined };
  }
  checkDataDirArguments(settings);
  checkForwardIdentity(settings);
  const { startUpstreams } = await import('../upstream/gateway.js');
  const gateway = await startUpstreams(settings.upstreams, {
    rules: settings.upstreamRules,
    logger: settings.logger,
    clientVersion: (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version,
    maxResultBytes: resolveLimits(settings.limits).maxStoredResultBytes,
    timeoutMs: settings.upstreamStartTimeoutMs,
    forwardIdentity: settings.upstreamsForwardIdentity,
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

/**
 * Refuse a stdio upstream whose argument, read as a path, is this server's state (the data directory with its
 * `secret` and `tasks.db`, a store elsewhere, the token file), a directory holding it, or something inside it: a file-reading upstream
 * (`server-filesystem /`) runs outside the tool confinement and could read them. `upstreamsAllowDataDir` names the
 * upstreams allowed anyway. An argument is read as a path the way such servers read theirs: relative to our working
 * directory (the child's), `~` as the home directory, and the value of `--flag=value`, `key=value` and `-d<value>`
 * too (see {@link pathsIn}).
 * @throws UsageError (exit 64), one line naming the first such upstream and argument.
 */
export function checkDataDirArguments(settings: Pick<ResolvedSettings, 'upstreams' | 'upstreamsAllowDataDir' | 'denied'>): void {
  const stdio = settings.upstreams.filter((spec): spec is Extract<UpstreamSpec, { transport: 'stdio' }> => spec.transport === 'stdio');
  const unknown = settings.upstreamsAllowDataDir.filter((name) => !stdio.some((spec) => spec.name === name));
  if (unknown.length > 0)
    throw new UsageError(
      `upstreamsAllowDataDir names no stdio upstream: ${unknown.join(', ')} (stdio upstreams: ${stdio.map((spec) => spec.name).join(', ') || 'none'})`,
    );
  // Our own files only: /proc/self of the child is the child's.
  const state = settings.denied.filter((entry) => entry.what !== 'process environment and memory');
  for (const spec of stdio) {
    if (settings.upstreamsAllowDataDir.includes(spec.name)) continue;
    for (const argument of spec.args) {
      const held = heldState(argument, state);
      if (held)
        throw new UsageError(
          `upstream ${spec.name}: its argument ${JSON.stringify(argument)} reaches this server's ${held.what} (${held.path}), which it could read; give it a directory without this server's state, or set upstreamsAllowDataDir: ["${spec.name}"] (--upstream-allow-data-dir ${spec.name}) if it must`,
        );
    }
  }
}

/** The server state `argument`, read as a path (see {@link checkDataDirArguments}), is, holds or lies in, if any. */
function heldState(argument: string, state: readonly DeniedState[]): DeniedState | undefined {
  for (const value of pathsIn(argument)) {
    const path = resolve(value === '~' || value.startsWith('~/') ? homedir() + value.slice(1) : value);
    const real = realPathOf(path);
    // A directory holding the state, or an existing file or directory inside it (a word that names nothing on
    // disk, such as `stdio` or `-y`, is not a path, even when the data directory is the working directory).
    const held = state.find(
      (entry) => isInsideRoots(entry.path, [path]) || isInsideRoots(entry.real, [real]) || (existsSync(path) && isInsideRoots(real, [entry.real])),
    );
    if (held) return held;
  }
  return undefined;
}

/**
 * The words of `argument` a server may read as a path: the argument itself; the value of `--flag=value`, `-d=value`
 * and `key=value` (a key without `/`: `root=/var/lib/x`, not a path holding `=`); and the value of a short option
 * glued to it (`-d/var/lib/x`: `-` and one character other than `-`, then the value). Reading `-y` or `-vvv` this way
 * gives `''` or `vv`, words that name nothing on disk, which {@link heldState} does not take for paths.
 */
function pathsIn(argument: string): string[] {
  const key = /^[^=/]*=/.exec(argument);
  const glued = /^-[^-]/.test(argument) ? argument.slice(2) : '';
  return [argument, key ? argument.slice(key[0].length) : '', glued].filter(Boolean);
}

/**
 * `upstreamsForwardIdentity` names HTTP upstreams only: a stdio child is shared by every caller of its process and has
 * no per-request headers.
 * @throws UsageError (exit 64) naming what is not an HTTP upstream.
 */
export function checkForwardIdentity(settings: Pick<ResolvedSettings, 'upstreams' | 'upstreamsForwardIdentity'>): void {
  const http = settings.upstreams.filter((spec) => spec.transport === 'http').map((spec) => spec.name);
  const other = settings.upstreamsForwardIdentity.filter((name) => !http.includes(name));
  if (other.length > 0)
    throw new UsageError(`upstreamsForwardIdentity names no HTTP upstream: ${other.join(', ')} (HTTP upstreams: ${http.join(', ') || 'none'})`);
}

/** The banner lines of the upstreams (`  upstream: <name> (…): N tools, ready`), or `''` without upstreams. */
export function upstreamLines(settings: Pick<ResolvedSettings, 'upstreams'>, gateway: UpstreamGateway | undefined): string {
  if (!gateway) return '';
  const statuses = gateway.statuses();
  return settings.upstreams
    .map((spec, index) => `  upstream: ${describeUpstream(spec)}: ${statuses[index]?.tools ?? 0} tools, ${statuses[index]?.state ?? 'unknown'}\n`)
    .join('');
}
