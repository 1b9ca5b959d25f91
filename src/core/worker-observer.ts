import type { TaskGeneration } from './task.js';

/**
 * What a worker reports about its runs, for metrics (and later traces): one port, so the worker carries no
 * metrics library and metrics are taken in one place. Labels passed here are bounded (tool names of the registry,
 * generations, statuses, reasons) — never task ids or owners. Every method is optional and must not throw.
 */
export interface WorkerObserver {
  /** A run started; `queueWaitMs` is the time since the task was created (first run) or became runnable again. */
  runStarted?(run: { tool: string; generation: TaskGeneration; attempt: number; queueWaitMs: number }): void;
  /** A run ended: settled to a terminal status, parked for input, or aborted (cancelled, expired, lease lost, shutdown). */
  runEnded?(run: { tool: string; generation: TaskGeneration; outcome: string; durationMs: number }): void;
  /** Lapsed leases taken over by one recovery pass. */
  leasesTakenOver?(count: number): void;
  /** A task whose lease lapsed was re-run (`rerun`) or failed (`interrupted`, `attempts_exhausted`). */
  orphanRecovered?(outcome: 'rerun' | 'interrupted' | 'attempts_exhausted'): void;
  /** A cancellation reached a running tool's `ctx.signal`. */
  cancelDelivered?(tool: string): void;
  /**
   * The isolated executor terminated the thread of a started run of `tool` that had not stopped `abortGraceMs`
   * after its signal aborted (a tool that ignores its signal, or blocks its thread).
   */
  threadTerminated?(tool: string): void;
  /** Shadow mode compared a task with its job (`error`: the adapter failed). */
  shadowChecked?(tool: string, result: 'match' | 'mismatch' | 'error'): void;
  /** Shadow mode recorded a difference (once per run, phase and pair of states). */
  shadowMismatch?(tool: string): void;
  /** A run of `tool` (task or inline) returned `structuredContent` over `limits.structuredContentMaxBytes` (issue 27 §2). */
  structuredContentOversized?(tool: string, bytes: number): void;
}
