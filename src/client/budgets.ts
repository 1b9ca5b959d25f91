/**
 * The requestor's budgets: separate limits for each phase of a call, so one slow phase cannot eat the others and
 * a lost connection ends in "outcome unknown" instead of a wait without end. All durations in milliseconds. The
 * absolute deadline (`WaitOptions.deadline` / `timeoutMs`) bounds everything on top; progress never extends it.
 */
export interface Budgets {
  /**
   * Timeout of the one `tools/call` request that creates the task (or runs the tool inline). Never retried.
   * @defaultValue the client's `requestTimeoutMs` (30 000)
   */
  createMs?: number;
  /** Most status reads (`tasks/get`, retries after errors included) one wait may send. @defaultValue unlimited */
  statusReads?: number;
  /** Longest time one wait observes the task's status. @defaultValue unlimited (only the deadline bounds it) */
  statusMs?: number;
  /**
   * Result retrieval: how long a v1 `tasks/result` of a terminal task is retried through transient failures before
   * the outcome is reported unknown. @defaultValue 60 000
   */
  resultMs?: number;
  /**
   * Reconciliation: how long the client keeps trying to reach the server again while it cannot observe a task it
   * knows (status reads, `tasks/cancel`), backing off from the poll interval to 30 s, before it reports
   * `outcome unknown` with the last status seen. @defaultValue 120 000
   */
  reconcileMs?: number;
}

/** Budgets with every default applied. */
export interface ResolvedBudgets {
  createMs: number | undefined;
  statusReads: number;
  statusMs: number | undefined;
  resultMs: number;
  reconcileMs: number;
}

/** The defaults of {@link Budgets}. */
export const DEFAULT_BUDGETS = Object.freeze({ resultMs: 60_000, reconcileMs: 120_000 } satisfies Budgets);

/**
 * Apply the defaults and check the values.
 * @throws RangeError naming the budget when one is not a non-negative integer (`statusReads` at least 1).
 */
export function resolveBudgets(budgets: Budgets = {}): ResolvedBudgets {
  for (const [name, value] of Object.entries(budgets)) {
    if (value === undefined) continue;
    const minimum = name === 'statusReads' ? 1 : 0;
    if (!Number.isInteger(value) || (value as number) < minimum) throw new RangeError(`budgets.${name} must be an integer ≥ ${minimum} (got ${String(value)})`);
  }
  return {
    createMs: budgets.createMs,
    statusReads: budgets.statusReads ?? Number.POSITIVE_INFINITY,
    statusMs: budgets.statusMs,
    resultMs: budgets.resultMs ?? DEFAULT_BUDGETS.resultMs,
    reconcileMs: budgets.reconcileMs ?? DEFAULT_BUDGETS.reconcileMs,
  };
}
