import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { V1_PROTOCOL_VERSION, V2_PROTOCOL_VERSION } from '../protocol/constants.js';
import type { McpTasksConfig } from './config/schema.js';
import { UsageError } from './usage-error.js';

/** The protocol versions this build serves on one endpoint. */
export const SERVED_PROTOCOL_VERSIONS: readonly string[] = [V1_PROTOCOL_VERSION, V2_PROTOCOL_VERSION];

/**
 * The installed version of package `name`, as this process would load it (its `package.json` found by walking up
 * from the module it resolves to); `undefined` when it is not installed.
 */
export function installedVersion(name: string): string | undefined {
  let directory: string;
  try {
    directory = dirname(fileURLToPath(import.meta.resolve(name)));
  } catch {
    return undefined;
  }
  for (;;) {
    const manifest = join(directory, 'package.json');
    if (existsSync(manifest)) {
      const parsed = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; version?: string };
      if (parsed.name === name) return parsed.version;
    }
    const parent = dirname(directory);
    if (parent === directory) return undefined;
    directory = parent;
  }
}

/** What the pins are compared with: the effective settings and the tools actually registered. */
export interface PinnedFacts {
  config: McpTasksConfig;
  tools: readonly string[];
  /** Effective limits (defaults filled in). */
  maxTtlMs: number | null;
  defaultTtlMs: number | null;
  concurrency: number;
}

const same = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && [...a].sort().every((item, index) => item === [...b].sort()[index]);

/** Every way the running configuration differs from its pins (empty when there are none or all hold). */
export function pinMismatches(facts: PinnedFacts, versionOf: (name: string) => string | undefined = installedVersion): string[] {
  const pins = facts.config.pins;
  if (!pins) return [];
  const problems: string[] = [];
  if (pins.protocolVersions && !same(pins.protocolVersions, SERVED_PROTOCOL_VERSIONS))
    problems.push(`pins.protocolVersions ${pins.protocolVersions.join(', ')} ≠ served ${SERVED_PROTOCOL_VERSIONS.join(', ')}`);
  for (const [name, wanted] of Object.entries(pins.sdk ?? {})) {
    const installed = versionOf(name);
    if (installed !== wanted) problems.push(`pins.sdk ${name}@${wanted} ≠ installed ${installed === undefined ? '(not installed)' : `${name}@${installed}`}`);
  }
  if (pins.allowedTools && !same(pins.allowedTools, facts.tools)) {
    const extra = facts.tools.filter((tool) => !pins.allowedTools?.includes(tool));
    const missing = pins.allowedTools.filter((tool) => !facts.tools.includes(tool));
    problems.push(
      `pins.allowedTools differ from the registered tools (${[extra.length > 0 ? `not pinned: ${extra.join(', ')}` : '', missing.length > 0 ? `pinned but absent: ${missing.join(', ')}` : ''].filter(Boolean).join('; ')})`,
    );
  }
  if (pins.maxTtlMs !== undefined && pins.maxTtlMs !== facts.maxTtlMs)
    problems.push(`pins.maxTtlMs ${String(pins.maxTtlMs)} ≠ limits.maxTtlMs ${String(facts.maxTtlMs)}`);
  if (pins.retentionMs !== undefined && pins.retentionMs !== facts.defaultTtlMs)
    problems.push(`pins.retentionMs ${String(pins.retentionMs)} ≠ limits.defaultTtlMs ${String(facts.defaultTtlMs)}`);
  if (pins.concurrency !== undefined && pins.concurrency !== facts.concurrency)
    problems.push(`pins.concurrency ${pins.concurrency} ≠ limits.concurrency ${facts.concurrency}`);
  return problems;
}

/**
 * Refuse to start when a pin does not hold, unless `--allow-unpinned` (then each mismatch is logged as a warning).
 * @throws UsageError (exit 64) listing every mismatch.
 */
export function enforcePins(facts: PinnedFacts, allowUnpinned: boolean, warn: (message: string) => void): void {
  const problems = pinMismatches(facts);
  if (problems.length === 0) return;
  if (allowUnpinned) {
    for (const problem of problems) warn(`unpinned (--allow-unpinned): ${problem}`);
    return;
  }
  throw new UsageError(`refusing to start: the configuration's pins do not hold (start with --allow-unpinned to override):\n  - ${problems.join('\n  - ')}`);
}
