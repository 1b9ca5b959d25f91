/**
 * What a check is: data (id, rule ids with a spec link, generation, gate, severity, what it needs) plus a `run`
 * function. Checks are small and independent; each gets its own {@link CheckContext} (its own evidence, its own
 * clean-up) and ends by returning (passed), throwing {@link CheckFailed} (failed) or {@link CheckSkipped} (skipped,
 * with the reason), possibly after {@link CheckContext.warn} (passed with a warning).
 */
import type { CheckContext } from './context.js';
import type { Exchange } from './wire/exchange.js';

/** A protocol generation: `v1` = 2025-11-25 experimental tasks, `v2` = the 2026-07-28 Tasks Extension. */
export type Generation = 'v1' | 'v2';

/**
 * The gates a verdict is given for:
 * - `contract` and `security` form the **hard gate** (`verify` exits non-zero when one of their checks fails);
 * - `recovery` (through the built-in fault proxy), `cancellation`, `compatibility`, `load` are reported separately.
 */
export type Gate = 'contract' | 'security' | 'recovery' | 'cancellation' | 'compatibility' | 'load';

/** Every gate, in report order. */
export const GATES: readonly Gate[] = ['contract', 'security', 'recovery', 'cancellation', 'compatibility', 'load'];
/** The gates of the hard gate. */
export const HARD_GATES: readonly Gate[] = ['contract', 'security'];

/**
 * How a violation counts: `error` — the check fails (a MUST, or a rule of our checklist); `warning` — it is
 * reported as a warning and never fails the gate (a SHOULD, or something the spec allows but a platform team
 * wants to know, such as unlimited retention).
 */
export type Severity = 'error' | 'warning';

/**
 * What a check needs beyond a server URL. A check whose need is not met is skipped with that reason, never passed.
 * Tool roles come from the tool map (see `tool-map.ts`); `task` is any mapped tool that runs as a task (the slow one
 * first); `tokenB` is a second principal (`--token-b`); `list` / `cancel` are the v1 `tasks.list` / `tasks.cancel`
 * capabilities; `http` a plain-HTTP URL the fault proxy can forward to.
 */
export type Need =
  'slow' | 'toolError' | 'throws' | 'asksInput' | 'asksTwoInputs' | 'sync' | 'required' | 'sideEffect' | 'task' | 'tokenB' | 'list' | 'cancel' | 'http';

/** A registered check. */
export interface CheckDefinition {
  /** Stable id, `<generation>.<area>.<behaviour>` (e.g. `v1.errors.unknown-task-id`); what `--only` selects. */
  readonly id: string;
  /** One line saying what is verified. */
  readonly title: string;
  readonly gate: Gate;
  readonly generation: Generation;
  readonly severity: Severity;
  /** Rule ids of the protocol reference (checklist `C-*`, v1 `R*`/`D*`, v2 `E*`/`X*`, base `B*`), most specific first. */
  readonly rules: readonly string[];
  readonly needs?: readonly Need[];
  /** Longest the check may run (ms); the runner aborts it after that. @defaultValue the run's `checkTimeoutMs` */
  readonly timeoutMs?: number;
  /** Runs after all others, alone, so its timings are not disturbed (the load measurements). */
  readonly alone?: boolean;
  run(ctx: CheckContext): Promise<void>;
}

/** Thrown by a check (usually through the `expect*` helpers) when the server broke the rule. */
export class CheckFailed extends Error {
  override readonly name = 'CheckFailed';
}

/** Thrown by a check that cannot run here; the message says why (and what would make it run). */
export class CheckSkipped extends Error {
  override readonly name = 'CheckSkipped';
}

/** How one check ended. `warning` counts as passed; `skipped` never does. */
export type CheckStatus = 'passed' | 'warning' | 'failed' | 'skipped';

/** The outcome of one check, with everything needed to judge it without re-running it. */
export interface CheckResult {
  id: string;
  title: string;
  gate: Gate;
  generation: Generation;
  severity: Severity;
  rules: readonly string[];
  /** Public spec section of the first rule. */
  spec: string;
  status: CheckStatus;
  /** Why it failed or was skipped; the warnings of a `warning`; empty for a plain pass. */
  message: string;
  /** Numbers a check measured (load figures, estimated id entropy …). */
  measurements: Record<string, number | string>;
  durationMs: number;
  /** Every request the check sent and the answer it got, in order. */
  evidence: Exchange[];
  /** The exchange a failure (or warning) is about, when it is about one. */
  failedExchange?: Exchange;
}
