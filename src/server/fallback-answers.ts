import { isTerminal } from '../core/state-machine.js';
import type { JsonObject, TaskRecord } from '../core/task.js';
import { toolErrorResult } from '../core/tool-outcome.js';
import { isoTime } from '../protocol/time.js';
import type { CallOutcome } from '../service/calls/call-service.js';
import { withPollHint } from '../service/poll-hint.js';

/**
 * The tool results of the task fallback tools (`--task-fallback-tools`) for hosts without task support: text a
 * model can act on (which tool to call next, with which `taskId`, and when), plus the same facts as
 * `structuredContent`. The decisions are the service's; this only writes them.
 */

/** `{"taskId":"…"}` as the model should pass it. */
function argumentsFor(taskId: string): string {
  return JSON.stringify({ taskId });
}

/** Whole seconds of a poll hint, at least 1 (a model reads "1 s" better than "250 ms"). */
function seconds(ms: number): number {
  return Math.max(1, Math.round(ms / 1000));
}

/** What every fallback answer says about the task: the fields of a 2025-11-25 `Task` a host can show. */
function taskFacts(record: TaskRecord): JsonObject {
  return {
    taskId: record.taskId,
    status: record.status,
    ...(record.statusMessage === null ? {} : { statusMessage: record.statusMessage }),
    createdAt: isoTime(record.createdAt),
    lastUpdatedAt: isoTime(record.lastUpdatedAt),
    pollIntervalMs: record.pollIntervalMs,
  };
}

/**
 * The text and the facts. The facts carry the text too, as `message`: Claude Code (and hosts like it) hand the model
 * `JSON.stringify(structuredContent)` instead of the text when there is one (issue 27 §2), and without the text the
 * model would not know which tool to call next.
 */
function textAnswer(text: string, structuredContent: JsonObject, isError = false): JsonObject {
  return { content: [{ type: 'text', text }], structuredContent: { ...structuredContent, message: text }, ...(isError ? { isError: true } : {}) };
}

/** The answer to a task-required tool called by a host without task support: the task started, and how to follow it. */
export function fallbackCreatedAnswer(record: TaskRecord, immediateResponse: string | undefined, now: number): JsonObject {
  const task = withPollHint(record, now);
  const args = argumentsFor(task.taskId);
  const text =
    `${immediateResponse === undefined ? '' : `${immediateResponse}\n`}` +
    // What the task says beyond the tool's own words: a task no worker runs yet says so ("waiting for a worker …",
    // issue 26 item 6) instead of reading as running.
    `Started as task ${task.taskId} (status: ${task.status}${task.statusMessage === null || task.statusMessage === immediateResponse ? '' : `: ${task.statusMessage}`}). ` +
    `It carries on after this answer. ` +
    `Call get_task_status ${args} to see how it goes (again about every ${seconds(task.pollIntervalMs)} s), ` +
    `get_task_result ${args} once it has completed, or cancel_task ${args} to stop it.`;
  return textAnswer(text, taskFacts(task));
}

/** The answer of a fallback tool call (`get_task_status`, `get_task_result`, `cancel_task`). */
export function fallbackOperationAnswer(outcome: Extract<CallOutcome, { kind: 'task_operation' }>, now: number): JsonObject {
  const task = withPollHint(outcome.task, now);
  const args = argumentsFor(task.taskId);
  const facts = taskFacts(task);
  const said = task.statusMessage === null ? '' : ` (${task.statusMessage})`;
  const later = `Call get_task_result ${args} again in about ${seconds(task.pollIntervalMs)} s.`;
  switch (outcome.operation) {
    case 'status': {
      if (isTerminal(task.status))
        return textAnswer(`Task ${task.taskId} has ended: ${task.status}${said}. Call get_task_result ${args} for its outcome.`, facts);
      const waiting = task.status === 'input_required' ? ' It waits for input that this host cannot give; cancel_task stops it.' : '';
      return textAnswer(`Task ${task.taskId} is ${task.status}${said}.${waiting} Ask again in about ${seconds(task.pollIntervalMs)} s.`, facts);
    }
    case 'cancel':
      return outcome.cancelled
        ? textAnswer(`Task ${task.taskId} is cancelled.`, facts)
        : textAnswer(`Task ${task.taskId} had already ended: ${task.status}${said}. Call get_task_result ${args} for its outcome.`, facts);
    case 'result': {
      const ended = outcome.details.outcome;
      if (!isTerminal(task.status)) return textAnswer(`Task ${task.taskId} has not finished yet: ${task.status}${said}. ${later}`, facts);
      if (task.status === 'cancelled') return { ...toolErrorResult(`Task ${task.taskId} was cancelled.`), structuredContent: facts };
      if (!ended) return { ...toolErrorResult(`Task ${task.taskId} ended without a stored outcome.`), structuredContent: facts };
      if (ended.kind === 'error')
        return {
          ...toolErrorResult(`Task ${task.taskId} failed: ${ended.error.message}`),
          structuredContent: { ...facts, error: ended.error as unknown as JsonObject },
        };
      return ended.result;
    }
  }
}
