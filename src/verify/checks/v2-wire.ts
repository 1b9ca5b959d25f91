/**
 * What the 2026-07-28 checks share with the other gates (compatibility, security, cancellation, recovery): the
 * extension's Task shape, the expected acknowledgement and `-32021` answers, polling to `input_required`, an
 * accepted answer, and a `subscriptions/listen` stream. The contract checks themselves are in contract-v2.ts.
 */
import { CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY, TASKS_EXTENSION_ID, V2_PROTOCOL_VERSION } from '../../protocol/constants.js';
import type { CheckContext } from '../context.js';
import { describe, expectError, expectHttpStatus, expectResult, expectThat, fail, isIsoTime, isNonNegativeInteger } from '../expect.js';
import type { WireAnswer } from '../wire/exchange.js';
import { requestId } from '../wire/requests.js';
import type { TaskState, V2TaskWire } from '../wire/tasks.js';
import { isTerminal } from './shared.js';

/** The Task shape of the extension (`taskId`, `status`, `createdAt`, `lastUpdatedAt`, `ttlMs` required; integers). */
function v2TaskShapeProblems(task: Record<string, unknown>): string[] {
  const problems: string[] = [];
  if (typeof task.taskId !== 'string' || task.taskId.length === 0) problems.push('taskId is not a non-empty string');
  if (!['working', 'input_required', 'completed', 'failed', 'cancelled'].includes(String(task.status)))
    problems.push(`status ${JSON.stringify(task.status)} is not a task status`);
  if (!isIsoTime(task.createdAt)) problems.push(`createdAt ${JSON.stringify(task.createdAt)} is not an ISO 8601 time`);
  if (!isIsoTime(task.lastUpdatedAt)) problems.push(`lastUpdatedAt ${JSON.stringify(task.lastUpdatedAt)} is not an ISO 8601 time`);
  if (!('ttlMs' in task)) problems.push('ttlMs is missing (required; null = unlimited)');
  else if (task.ttlMs !== null && !isNonNegativeInteger(task.ttlMs))
    problems.push(`ttlMs ${JSON.stringify(task.ttlMs)} is neither a non-negative integer nor null (X10)`);
  if ('pollIntervalMs' in task && !isNonNegativeInteger(task.pollIntervalMs))
    problems.push(`pollIntervalMs ${JSON.stringify(task.pollIntervalMs)} is not a non-negative integer (E18, X10)`);
  for (const legacy of ['ttl', 'pollInterval', 'task']) if (legacy in task) problems.push(`carries the 2025-11-25 field "${legacy}" (X3, X9)`);
  return problems;
}

export function expectTaskShape(task: Record<string, unknown>, what: string, answer: WireAnswer): void {
  const problems = v2TaskShapeProblems(task);
  if (problems.length > 0) fail(`${what}: ${problems.join('; ')}`, answer);
}

/** Fails unless an answer is the empty acknowledgement `{resultType: "complete"}` (E25, E30). */
export function expectAck(answer: WireAnswer, what: string): void {
  const result = expectResult(answer, what);
  const extra = Object.keys(result).filter((key) => key !== 'resultType' && key !== '_meta');
  expectThat(
    result.resultType === 'complete' && extra.length === 0,
    `${what}: expected the empty acknowledgement {"resultType":"complete"}, got ${describe(answer)}`,
    answer,
  );
}

/** Fails unless an answer is `-32021` with `data.requiredCapabilities` naming the extension, on HTTP 400 (E6, E41, B4). */
export function expectMissingCapability(answer: WireAnswer, what: string): void {
  const error = expectError(answer, -32021, what);
  const required = ((error.data as { requiredCapabilities?: { extensions?: Record<string, unknown> } } | undefined)?.requiredCapabilities?.extensions ?? {})[
    TASKS_EXTENSION_ID
  ];
  expectThat(required !== undefined, `${what}: -32021 without data.requiredCapabilities.extensions["${TASKS_EXTENSION_ID}"] (E6)`, answer);
  expectHttpStatus(answer, 400, what);
}

/** Poll a v2 task until it asks for input; returns the task with its `inputRequests`. */
export async function pollToInput(
  ctx: CheckContext,
  wire: V2TaskWire,
  taskId: string,
): Promise<TaskState & { inputRequests: Record<string, { method?: unknown }> }> {
  const task = await ctx.poll(wire, taskId, (seen) => seen.status === 'input_required' || isTerminal(seen.status), {
    timeoutMs: 10_000,
    what: 'task to ask for input',
  });
  if (task.status !== 'input_required') fail(`the input tool ended "${task.status}" without asking for input`);
  const requests = task.raw.inputRequests;
  if (typeof requests !== 'object' || requests === null || Array.isArray(requests) || Object.keys(requests).length === 0)
    fail(`an input_required task has no inputRequests map (E19): ${JSON.stringify(task.raw).slice(0, 300)}`);
  return { ...task, inputRequests: requests as Record<string, { method?: unknown }> };
}

/** An `ElicitResult` accepting with `content`. */
export function accept(content: Record<string, unknown>): Record<string, unknown> {
  return { action: 'accept', content };
}

/** The answer to a `subscriptions/listen` read for `ms` (the stream is then closed). */
export function listen(
  ctx: CheckContext,
  wire: V2TaskWire,
  taskIds: string[],
  options: { capabilities?: Record<string, unknown>; ms: number; until?: (message: unknown) => boolean },
): Promise<WireAnswer & { listenId: string }> {
  const id = `verify-listen-${requestId()}`;
  const rawBody = JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'subscriptions/listen',
    params: {
      notifications: { taskIds },
      _meta: {
        [PROTOCOL_VERSION_META_KEY]: V2_PROTOCOL_VERSION,
        [CLIENT_CAPABILITIES_META_KEY]: options.capabilities ?? { extensions: { [TASKS_EXTENSION_ID]: {} } },
      },
    },
  });
  return wire
    .request(
      'subscriptions/listen',
      {},
      { rawBody, readForMs: options.ms, timeoutMs: options.ms + 5000, ...(options.until ? { stopWhen: options.until } : {}) },
    )
    .then((answer) => ({ ...answer, listenId: id }));
}
