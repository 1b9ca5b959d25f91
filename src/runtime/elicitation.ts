import { TasksError } from '../core/errors.js';
import type { TaskStore } from '../core/store.js';
import type { InputRequestRecord, JsonObject, TaskRecord } from '../core/task.js';
import type { ElicitRequest, ElicitResult } from '../core/tool.js';
import { ErrorCode } from '../protocol/constants.js';
import { sanitizeStatusMessage } from './outcome.js';

/**
 * Thrown out of `ctx.elicit` when the task parked for input: the run ends without an outcome and is started again
 * once every outstanding question is answered. A tool must let it propagate (the run's signal is aborted too, so a
 * tool that swallows it still stops).
 */
export class ParkedForInput extends Error {
  override readonly name = 'ParkedForInput';
  constructor() {
    super('task parked until its input requests are answered');
  }
}

/**
 * Input-request keys encode the call order of the question: `input-<n>` the first time question n is asked,
 * `input-<n>.<k>` when it is asked again (after an answer that failed its schema). Keys are never reused (E23).
 */
const KEY_PATTERN = /^input-(\d+)(?:\.(\d+))?$/;

/** The call-order number of a task input key, or `undefined` for a key this runtime did not mint. */
export function ordinalOfKey(key: string): number | undefined {
  const match = KEY_PATTERN.exec(key);
  return match ? Number(match[1]) : undefined;
}

/** The next key for question `ordinal`, given the keys it already had. */
export function nextKey(ordinal: number, previous: readonly InputRequestRecord[]): string {
  return previous.length === 0 ? `input-${ordinal}` : `input-${ordinal}.${previous.length + 1}`;
}

/** The `{method, params}` of an `inputRequests` entry (and of a v1 `elicitation/create`) for a question. */
export function toWireRequest(request: ElicitRequest): JsonObject {
  const params: JsonObject =
    request.mode === 'url'
      ? { mode: 'url', message: request.message, url: request.url, elicitationId: request.elicitationId }
      : { mode: 'form', message: request.message, requestedSchema: request.requestedSchema };
  return { method: 'elicitation/create', params };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Check the creating request declared what a question needs (SEP-2663 E28, 2025-11-25 client capabilities):
 * form mode needs `elicitation` (an empty object means form) or `elicitation.form`; URL mode `elicitation.url`.
 * @throws TasksError `-32021` with `data.requiredCapabilities` naming what is missing.
 */
export function assertElicitationDeclared(clientCapabilities: JsonObject, request: ElicitRequest): void {
  const elicitation = clientCapabilities.elicitation;
  const mode = request.mode === 'url' ? 'url' : 'form';
  const declared =
    isObject(elicitation) &&
    (mode === 'url' ? isObject(elicitation.url) : isObject(elicitation.form) || (elicitation.form === undefined && elicitation.url === undefined));
  if (!declared) {
    throw new TasksError(ErrorCode.MissingRequiredClientCapability, 'Missing required client capability', {
      requiredCapabilities: { elicitation: { [mode]: {} } },
    });
  }
}

/** The statusMessage of a task waiting on `request` (an `inputRequests` entry). */
export function waitingMessage(request: JsonObject): string {
  const message = (request.params as JsonObject | undefined)?.message;
  return sanitizeStatusMessage(`Waiting for input: ${typeof message === 'string' ? message : String(request.method)}`);
}

/** What a task run's `ctx.elicit` needs. */
export interface TaskElicitorInput {
  record: TaskRecord;
  store: TaskStore;
  leaseOwner: string;
  now(): number;
  /** Abort the run's signal with reason `parked`. */
  park(): void;
}

/**
 * `ctx.elicit` / `ctx.elicitAll` for a task run: answered questions are replayed from the store; the first run that
 * reaches an unanswered question parks the task with every question of that call outstanding at once.
 */
export function createTaskElicitor(input: TaskElicitorInput): { elicitAll(requests: readonly ElicitRequest[]): Promise<ElicitResult[]> } {
  let calls = 0;
  let known: Promise<InputRequestRecord[]> | undefined;
  return {
    async elicitAll(requests) {
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
      if (toAsk.length === 0 && !waiting) return answers;
      if (toAsk.length > 0) {
        const message = waitingMessage((toAsk[0] as { request: JsonObject }).request);
        await input.store.requestInput(input.record.taskId, toAsk, { leaseOwner: input.leaseOwner, statusMessage: message, now: input.now() });
      }
      input.park();
      throw new ParkedForInput();
    },
  };
}
