import type { TaskStatus } from './task.js';

/**
 * Allowed status transitions (2025-11-25 R16, SEP-2663 E12): `working ⇄ input_required`, both → a terminal
 * status; terminal statuses never change.
 */
export const ALLOWED_TRANSITIONS: Readonly<Record<TaskStatus, readonly TaskStatus[]>> = Object.freeze({
  working: Object.freeze(['input_required', 'completed', 'failed', 'cancelled'] as TaskStatus[]),
  input_required: Object.freeze(['working', 'completed', 'failed', 'cancelled'] as TaskStatus[]),
  completed: Object.freeze([] as TaskStatus[]),
  failed: Object.freeze([] as TaskStatus[]),
  cancelled: Object.freeze([] as TaskStatus[]),
});

/** Whether `status` is terminal (`completed`, `failed`, `cancelled`). */
export function isTerminal(status: TaskStatus): boolean {
  return ALLOWED_TRANSITIONS[status].length === 0;
}

/** Whether the state machine allows `from → to`. */
export function canTransition(from: TaskStatus, to: TaskStatus): boolean {
  return ALLOWED_TRANSITIONS[from].includes(to);
}

/**
 * The statuses from which `to` is reachable. Stores use this as the condition of a conditional write
 * (`UPDATE … WHERE status IN (…)`), so races are settled by the database, not by JavaScript.
 */
export function sourcesOf(to: TaskStatus): TaskStatus[] {
  return (Object.keys(ALLOWED_TRANSITIONS) as TaskStatus[]).filter((from) => canTransition(from, to));
}
