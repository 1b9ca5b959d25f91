import { assertElicitationDeclared, MAX_INPUT_KEYS_PER_TASK, nextKey, ordinalOfKey, toWireRequest, waitingMessage } from '../core/elicitation.js';
import type { ExecutionHost } from '../core/executor.js';
import type { TaskStore } from '../core/store.js';
import type { InputRequestRecord, JsonObject, TaskRecord } from '../core/task.js';
import type { ElicitResult } from '../core/tool.js';
import { failByRuntime } from './fail-task.js';

/** What a task run's questions need. */
export interface TaskElicitorInput {
  record: TaskRecord;
  store: TaskStore;
  leaseOwner: string;
  now(): number;
}

/**
 * `ctx.elicitAll` of a task run, as the host answers it: questions answered before are replayed from the store;
 * the first run that reaches an unanswered one parks the task — every question of that call outstanding at once,
 * `working → input_required` with no lease — and the run ends (`parked`). It runs again once all are answered.
 * A question that would take the task past `MAX_INPUT_KEYS_PER_TASK` keys fails it (`data.reason: "input_limit"`)
 * and ends the run the same way.
 */
export function createTaskElicitor(input: TaskElicitorInput): ExecutionHost['elicit'] {
  let calls = 0;
  let known: Promise<InputRequestRecord[]> | undefined;
  return async (requests) => {
    const ordinals = requests.map(() => (calls += 1));
    known ??= input.store.listInputRequests(input.record.taskId);
    const rows = await known;
    const answers: ElicitResult[] = [];
    const toAsk: Array<{ key: string; request: JsonObject }> = [];
    let waiting = false;
    requests.forEach((request, index) => {
      const ordinal = ordinals[index] as number;
      const previous = rows.filter((row) => ordinalOfKey(row.key) === ordinal);
      const answered = previous.find((row) => row.state === 'answered');
      if (answered) {
        answers.push(answered.response as unknown as ElicitResult);
        return;
      }
      if (previous.some((row) => row.state === 'pending')) {
        waiting = true;
        return;
      }
      assertElicitationDeclared(input.record.clientCapabilities, request);
      toAsk.push({ key: nextKey(ordinal, previous), request: toWireRequest(request) });
    });
    if (toAsk.length === 0 && !waiting) return { answers };
    if (rows.length + toAsk.length > MAX_INPUT_KEYS_PER_TASK) {
      // Hosts ignore keys past the 16th (see MAX_INPUT_KEYS_PER_TASK): fail now rather than wait for an answer that cannot come.
      const message = `Tool ${input.record.toolName} asked for more than ${MAX_INPUT_KEYS_PER_TASK} inputs over this task's life (${rows.length} asked, ${toAsk.length} more)`;
      await failByRuntime(input.store, input.record.taskId, 'input_limit', message, input.now());
      return { parked: true };
    }
    if (toAsk.length > 0) {
      const message = waitingMessage((toAsk[0] as { request: JsonObject }).request);
      await input.store.requestInput(input.record.taskId, toAsk, { leaseOwner: input.leaseOwner, statusMessage: message, now: input.now() });
    }
    return { parked: true };
  };
}
