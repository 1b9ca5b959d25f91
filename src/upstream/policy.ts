import { invalidParams } from '../core/errors.js';
import type { ToolExecution } from '../core/tool.js';

/**
 * How an upstream tool runs here (`upstreamTools` of the configuration, issue 28): its task mode, whether a call
 * interrupted by a crash of the process that ran it may be sent again, its runtime limit and its tasks' retention. The default is `task-optional` and not
 * idempotent: an interrupted call fails `interrupted` and the user decides — never run twice silently.
 */
export interface UpstreamToolPolicy {
  execution: ToolExecution;
  idempotent: boolean;
  /** Longest run of a call (ms), instead of the server's `runtimeLimitMs` (see `ToolDefinition.runtimeLimitMs`). */
  runtimeLimitMs?: number;
  /** Retention of its tasks when none is asked for (ms), instead of the server's `defaultTtlMs`. */
  defaultTtlMs?: number;
}

/** The policy of a tool no rule names. */
export const DEFAULT_UPSTREAM_POLICY: Readonly<UpstreamToolPolicy> = Object.freeze({ execution: 'task-optional', idempotent: false });

/** One rule as the configuration gives it: either field may be left out (the next rule or the default decides). */
export type UpstreamToolRule = Partial<UpstreamToolPolicy>;

/**
 * The rules by pattern: a listed tool name (`everything_echo`), a prefix ending in `*` (`everything_*`), or `*`.
 * For each field, the exact name wins over any prefix, a longer prefix over a shorter one, and a prefix over `*`.
 */
export type UpstreamToolRules = Readonly<Record<string, UpstreamToolRule>>;

/** The patterns of `rules`, most specific first (exact names, then prefixes by length, then `*`). */
function bySpecificity(rules: UpstreamToolRules): string[] {
  const rank = (pattern: string): number => (pattern.endsWith('*') ? pattern.length - 1 : Number.MAX_SAFE_INTEGER);
  return Object.keys(rules).sort((a, b) => rank(b) - rank(a));
}

function matches(pattern: string, name: string): boolean {
  return pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : pattern === name;
}

/** The policy of the listed tool `name` under `rules` (see {@link UpstreamToolRules}). */
export function resolveUpstreamPolicy(name: string, rules: UpstreamToolRules): UpstreamToolPolicy {
  const policy: Partial<UpstreamToolPolicy> = {};
  for (const pattern of bySpecificity(rules)) {
    if (!matches(pattern, name)) continue;
    const rule = rules[pattern] as UpstreamToolRule;
    if (policy.execution === undefined && rule.execution !== undefined) policy.execution = rule.execution;
    if (policy.idempotent === undefined && rule.idempotent !== undefined) policy.idempotent = rule.idempotent;
    if (policy.runtimeLimitMs === undefined && rule.runtimeLimitMs !== undefined) policy.runtimeLimitMs = rule.runtimeLimitMs;
    if (policy.defaultTtlMs === undefined && rule.defaultTtlMs !== undefined) policy.defaultTtlMs = rule.defaultTtlMs;
  }
  return { ...DEFAULT_UPSTREAM_POLICY, ...policy };
}

/**
 * Check that every rule names at least one listed upstream tool: a misspelt name would leave the real tool on the
 * default policy (say, not idempotent when the operator meant it to be) without a word.
 * @throws TasksError `-32602` naming each pattern that matches nothing, with the tools there are.
 */
export function checkUpstreamRules(rules: UpstreamToolRules, listed: readonly string[]): void {
  const unmatched = Object.keys(rules).filter((pattern) => !listed.some((name) => matches(pattern, name)));
  if (unmatched.length > 0)
    throw invalidParams(`upstreamTools names no upstream tool: ${unmatched.join(', ')} (upstream tools: ${listed.join(', ') || 'none'})`);
}
