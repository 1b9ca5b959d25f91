/**
 * Pieces several gates use: unknown ids, the "not found" fingerprint two answers are compared by, the status
 * machine, and a per-generation check factory (one definition, a `v1.` and a `v2.` check).
 */
import { randomBytes } from 'node:crypto';

import type { CheckDefinition, Gate, Generation, Need, Severity } from '../check.js';
import type { CheckContext } from '../context.js';
import { describe, fail, skip } from '../expect.js';
import type { ToolRef } from '../tool-map.js';
import type { WireAnswer } from '../wire/exchange.js';
import { TERMINAL_STATUSES } from '../wire/tasks.js';

/** An id no server has issued (random, 128 bits, URL-safe). */
export function unknownTaskId(): string {
  return `verify-${randomBytes(16).toString('base64url')}`;
}

/**
 * What an answer reveals: HTTP status, JSON-RPC code and message with the asked id masked, or the result's
 * presence. Two answers with equal fingerprints cannot be told apart by a caller.
 */
export function fingerprint(answer: WireAnswer, askedId: string): string {
  const error = answer.response?.error;
  if (error)
    return `HTTP ${answer.status} error ${error.code} ${JSON.stringify(error.message.replaceAll(askedId, '<id>'))}${error.data === undefined ? '' : ` data ${JSON.stringify(error.data).replaceAll(askedId, '<id>')}`}`;
  return answer.response?.result ? `HTTP ${answer.status} result` : `HTTP ${answer.status} no response`;
}

/** Fails unless `answer` (about `id`) is indistinguishable from `reference` (about an unknown id). */
export function expectLooksUnknown(answer: WireAnswer, id: string, reference: WireAnswer, referenceId: string, what: string): void {
  const seen = fingerprint(answer, id);
  const unknown = fingerprint(reference, referenceId);
  if (seen !== unknown) fail(`${what}: answered ${describe(answer)}, which differs from the answer for an unknown id (${describe(reference)})`, answer);
}

/** Allowed status transitions (R16, E12); a terminal status never changes. */
const NEXT: Readonly<Record<string, readonly string[]>> = {
  working: ['working', 'input_required', 'completed', 'failed', 'cancelled'],
  input_required: ['input_required', 'working', 'completed', 'failed', 'cancelled'],
  completed: ['completed'],
  failed: ['failed'],
  cancelled: ['cancelled'],
};

/** The first illegal step in a sequence of observed statuses, if any. */
export function illegalTransition(statuses: readonly string[]): string | undefined {
  for (let index = 1; index < statuses.length; index += 1) {
    const from = statuses[index - 1] as string;
    const to = statuses[index] as string;
    if (!NEXT[from]?.includes(to)) return `${from} → ${to}`;
  }
  return undefined;
}

/** Whether a status is terminal. */
export function isTerminal(status: string): boolean {
  return TERMINAL_STATUSES.has(status);
}

/** The fields of a per-generation check; `run` learns its generation from the context. */
export interface BothSpec {
  /** Id without the generation prefix, e.g. `security.guessed-ids`. */
  id: string;
  title: string;
  gate: Gate;
  severity?: Severity;
  /** Rule ids per generation. */
  rules: Record<Generation, readonly string[]>;
  needs?: readonly Need[];
  timeoutMs?: number;
  alone?: boolean;
  run(ctx: CheckContext): Promise<void>;
}

/** One definition, two checks: `v1.<id>` and `v2.<id>`. */
export function both(spec: BothSpec): CheckDefinition[] {
  return (['v1', 'v2'] as const).map((generation) => ({
    id: `${generation}.${spec.id}`,
    title: spec.title,
    gate: spec.gate,
    generation,
    severity: spec.severity ?? 'error',
    rules: spec.rules[generation],
    ...(spec.needs ? { needs: spec.needs } : {}),
    ...(spec.timeoutMs ? { timeoutMs: spec.timeoutMs } : {}),
    ...(spec.alone ? { alone: true } : {}),
    run: spec.run,
  }));
}

/** A check of one generation. */
export function check(generation: Generation, spec: Omit<CheckDefinition, 'generation' | 'severity'> & { severity?: Severity }): CheckDefinition {
  return { ...spec, generation, severity: spec.severity ?? 'error' };
}

/** Percentile (0–100) of a list of numbers; 0 for an empty list. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
}

/** A role's tool that must be task-optional on v1 (one that can also answer inline); skips otherwise. */
export function optionalRole(ctx: CheckContext, role: 'slow' | 'asksInput'): ToolRef {
  const ref = ctx.role(role);
  const support = ctx.served.tools.get(ref.tool)?.taskSupport;
  if (ctx.generation === 'v1' && support !== 'optional')
    skip(`the ${role} tool ${ref.tool} is not task-optional (taskSupport ${support ?? 'absent'}); nothing to run inline`);
  return ref;
}
