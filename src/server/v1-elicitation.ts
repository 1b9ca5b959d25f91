import type { Server } from '@modelcontextprotocol/server';

import { isTaskNotFound } from '../core/errors.js';
import type { InputRequestRecord, TaskRecord } from '../core/task.js';
import { RELATED_TASK_META_KEY } from '../protocol/constants.js';
import type { CallerIdentity } from '../service/caller.js';
import type { HandlerDeps } from './deps.js';
import { replyCaller } from './request-caller.js';

/**
 * The 2025-11-25 input side channel (R27–R31). A parked task's questions go to the client as real
 * `elicitation/create` requests on the `tasks/result` stream, with JSON-RPC ids we mint
 * (`mcp-tasks-input/<taskId>/<key>`) so that the client's reply can be routed to the task through the store by
 * whichever process receives it — also after a restart, when the session that carried the question is gone.
 */
const PREFIX = 'mcp-tasks-input/';

/** The JSON-RPC id of the elicitation request for input `key` of a task. */
export function inputRequestId(taskId: string, key: string): string {
  return `${PREFIX}${taskId}/${key}`;
}

/** The task and key an elicitation reply belongs to, or `undefined` when the id is not one of ours. */
export function parseInputRequestId(id: unknown): { taskId: string; key: string } | undefined {
  if (typeof id !== 'string' || !id.startsWith(PREFIX)) return undefined;
  const rest = id.slice(PREFIX.length);
  const slash = rest.indexOf('/');
  if (slash <= 0 || slash === rest.length - 1) return undefined;
  return { taskId: rest.slice(0, slash), key: rest.slice(slash + 1) };
}

/** A JSON-RPC response message (a reply from the client), as posted or written to stdin. */
export interface JsonRpcResponseMessage {
  jsonrpc: '2.0';
  id: string | number | null;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

/** Whether `message` is a JSON-RPC response (no `method`, an `id`, and a `result` or an `error`). */
export function isJsonRpcResponse(message: unknown): message is JsonRpcResponseMessage {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return false;
  const candidate = message as Record<string, unknown>;
  return candidate.method === undefined && 'id' in candidate && ('result' in candidate || 'error' in candidate);
}

/**
 * Route a client's reply to one of our elicitation requests into the task it belongs to, through the task service
 * (which checks the owner). The reply counts only for the task's owner (a foreign or unknown task is silently
 * dropped: no existence leaks); an error reply means the client could not ask the user and is recorded as `cancel`.
 * @returns `false` when the message is not a reply to one of our requests (the SDK handles it).
 */
export async function routeInputResponse(deps: Pick<HandlerDeps, 'service' | 'logger'>, identity: CallerIdentity, message: unknown): Promise<boolean> {
  if (!isJsonRpcResponse(message)) return false;
  const target = parseInputRequestId(message.id);
  if (!target) return false;
  const answer = message.result ?? { action: 'cancel' };
  try {
    await deps.service.tasks.answerInput(replyCaller(identity), target.taskId, { [target.key]: answer });
  } catch (error) {
    if (!isTaskNotFound(error)) throw error;
    deps.logger.info({}, 'elicitation reply for an unknown or foreign task dropped');
  }
  return true;
}

/**
 * Send the outstanding questions of a parked v1 task to the client as `elicitation/create` on the stream of the
 * `tasks/result` request `relatedRequestId`, each at most once per call (`sent` remembers them).
 */
export async function deliverInputRequests(
  server: Server,
  record: TaskRecord,
  pending: readonly InputRequestRecord[],
  relatedRequestId: string | number,
  sent: Set<string>,
): Promise<void> {
  if (record.status !== 'input_required' || !server.transport) return;
  for (const request of pending) {
    if (sent.has(request.key)) continue;
    sent.add(request.key);
    const params = { ...(request.request.params as Record<string, unknown>), _meta: { [RELATED_TASK_META_KEY]: { taskId: record.taskId } } };
    await server.transport.send(
      { jsonrpc: '2.0', id: inputRequestId(record.taskId, request.key), method: String(request.request.method), params },
      { relatedRequestId },
    );
  }
}
