import type { IncomingMessage, ServerResponse } from 'node:http';

import { missingTasksExtension } from '../../core/errors.js';
import type { TaskEvent } from '../../core/store.js';
import type { JsonObject } from '../../core/task.js';
import { CLIENT_CAPABILITIES_META_KEY, ErrorCode, PROTOCOL_VERSION_META_KEY, SUBSCRIPTION_ID_META_KEY, V2_PROTOCOL_VERSION } from '../../protocol/constants.js';
import { attemptMeta } from '../../protocol/constants.js';
import type { CallerIdentity, TaskCaller } from '../../service/caller.js';
import { withPollHint } from '../../service/poll-hint.js';
import type { TaskSubscription } from '../../service/tasks/tasks-door.js';
import type { HandlerDeps } from '../deps.js';
import { detailedTask } from '../detailed-task.js';
import { requestCaller } from '../request-caller.js';
import { writeJsonRpcError } from './respond.js';

/** Most task ids one listen request may name. */
const MAX_TASK_IDS = 1000;
/** statusMessage-only changes are pushed at most this often per task (ms). */
const MESSAGE_THROTTLE_MS = 1000;
/** SSE comment keep-alive interval (ms). */
const KEEP_ALIVE_MS = 15_000;

type ListenBody = {
  jsonrpc: '2.0';
  id: string | number;
  method: 'subscriptions/listen';
  params: { notifications: { taskIds: unknown } & Record<string, unknown>; _meta?: Record<string, unknown> };
};

/** Whether a posted 2026-07-28 message is a `subscriptions/listen` that asks for task notifications. */
export function isTaskListenRequest(body: unknown): body is ListenBody {
  const candidate = body as Partial<ListenBody> | undefined;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    candidate.method === 'subscriptions/listen' &&
    typeof candidate.params?.notifications === 'object' &&
    candidate.params.notifications !== null &&
    'taskIds' in candidate.params.notifications
  );
}

/**
 * `subscriptions/listen` with `notifications.taskIds` (SEP-2663 E33–E37, base B18/B19), served by us because the SDK's
 * filter has no `taskIds`. The whole request is rejected with `-32021` (HTTP 400) without the extension (E35).
 * The ack lists only the caller's own tasks (E45) plus the list-changed filters we honour; then every committed
 * change of an accepted task is pushed in commit order as `notifications/tasks` with the `DetailedTask` of that
 * moment (no `resultType`), statusMessage-only changes at most once a second per task, all tagged with the
 * subscription id. On shutdown the stream ends with the listen result.
 */
export class TaskListenRoute {
  private readonly open = new Set<() => void>();

  constructor(private readonly deps: Pick<HandlerDeps, 'service' | 'clock' | 'logger'>) {}

  /** Serve one listen request; `identity` is the authenticated caller. */
  async serve(request: IncomingMessage, response: ServerResponse, body: ListenBody, identity: CallerIdentity): Promise<void> {
    const meta = body.params._meta ?? {};
    const version = meta[PROTOCOL_VERSION_META_KEY];
    if (typeof version !== 'string' || typeof meta[CLIENT_CAPABILITIES_META_KEY] !== 'object') {
      writeJsonRpcError(
        response,
        400,
        body.id,
        ErrorCode.InvalidParams,
        `Missing required _meta field ${typeof version !== 'string' ? PROTOCOL_VERSION_META_KEY : CLIENT_CAPABILITIES_META_KEY}`,
      );
      return;
    }
    const headerVersion = request.headers['mcp-protocol-version'];
    const headerMethod = request.headers['mcp-method'];
    if ((headerVersion !== undefined && headerVersion !== version) || (headerMethod !== undefined && headerMethod !== body.method)) {
      writeJsonRpcError(response, 400, body.id, ErrorCode.HeaderMismatch, 'Header mismatch: MCP-Protocol-Version / Mcp-Method do not match the request');
      return;
    }
    if (version !== V2_PROTOCOL_VERSION) {
      writeJson(response, 400, {
        jsonrpc: '2.0',
        id: body.id,
        error: {
          code: ErrorCode.UnsupportedProtocolVersion,
          message: 'Unsupported protocol version',
          data: { supported: [V2_PROTOCOL_VERSION], requested: version },
        },
      });
      return;
    }
    const caller = requestCaller(identity, meta);
    if (caller.generation !== 'v2') {
      writeJson(response, 400, { jsonrpc: '2.0', id: body.id, error: missingTasksExtension({ method: 'subscriptions/listen' }).toJsonRpc() });
      return;
    }
    const requested = body.params.notifications.taskIds;
    if (!Array.isArray(requested) || requested.length > MAX_TASK_IDS || !requested.every((id) => typeof id === 'string')) {
      writeJsonRpcError(response, 400, body.id, ErrorCode.InvalidParams, `notifications.taskIds must be an array of at most ${MAX_TASK_IDS} task ids`);
      return;
    }
    const events = new EventRelay();
    const subscription = await this.deps.service.tasks.subscribe(caller as TaskCaller, requested as string[], (notice) => {
      if (notice.kind === 'event') events.push(notice.event);
    });
    // Only taskIds is honoured: the server advertises no listChanged capability, so (as the SDK does for a listen
    // without taskIds) the other filters are left out of the acknowledgement.
    this.stream(response, body.id, subscription, events, { taskIds: [...subscription.taskIds] });
  }

  /** End every open listen stream with its result (server shutdown). */
  close(): void {
    for (const end of [...this.open]) end();
  }

  private stream(response: ServerResponse, subscriptionId: string | number, subscription: TaskSubscription, events: EventRelay, honoured: JsonObject): void {
    const tag = { [SUBSCRIPTION_ID_META_KEY]: subscriptionId };
    response.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    const write = (message: unknown): void => {
      if (!response.destroyed) response.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
    };
    write({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: honoured, _meta: tag } });

    let chain = Promise.resolve();
    const lastMessageAt = new Map<string, number>();
    const trailing = new Map<string, NodeJS.Timeout>();
    const push = (event: TaskEvent): void => {
      chain = chain
        .then(() => this.notify(subscription, event, tag, write))
        .catch((error) => this.deps.logger.warn({ err: error }, 'task notification failed'));
    };
    const onEvent = (event: TaskEvent): void => {
      if (event.kind === 'status' || event.kind === 'input') {
        clearTimeout(trailing.get(event.taskId));
        trailing.delete(event.taskId);
        push(event);
      } else if (event.kind === 'message') {
        const wait = (lastMessageAt.get(event.taskId) ?? 0) + MESSAGE_THROTTLE_MS - Date.now();
        clearTimeout(trailing.get(event.taskId));
        const send = (): void => {
          trailing.delete(event.taskId);
          lastMessageAt.set(event.taskId, Date.now());
          push(event);
        };
        if (wait <= 0) send();
        else trailing.set(event.taskId, setTimeout(send, wait));
      }
    };
    // The state of each task at subscription time comes first, queued before any later event, so a client that
    // subscribes to a task already waiting for input learns it at once and nothing in between is lost.
    for (const taskId of subscription.taskIds) {
      chain = chain
        .then(() => this.snapshot(subscription, taskId, tag, write))
        .catch((error) => this.deps.logger.warn({ err: error }, 'task notification failed'));
    }
    events.attach(onEvent);
    const keepAlive = setInterval(() => {
      if (!response.destroyed) response.write(': keep-alive\n\n');
    }, KEEP_ALIVE_MS);
    const cleanup = (): void => {
      subscription.close();
      clearInterval(keepAlive);
      for (const timer of trailing.values()) clearTimeout(timer);
      this.open.delete(end);
    };
    const end = (): void => {
      cleanup();
      write({ jsonrpc: '2.0', id: subscriptionId, result: { resultType: 'complete', _meta: tag } });
      response.end();
    };
    this.open.add(end);
    response.on('close', cleanup);
  }

  /** The task as it is now. */
  private async snapshot(subscription: TaskSubscription, taskId: string, tag: JsonObject, write: (message: unknown) => void): Promise<void> {
    const record = await subscription.read(taskId);
    if (!record) return;
    const current = withPollHint(record, this.deps.clock.now());
    write({
      jsonrpc: '2.0',
      method: 'notifications/tasks',
      params: { ...detailedTask(current, await subscription.details(current)), _meta: { ...tag, ...attemptMeta(current.attempt) } },
    });
  }

  /** One `notifications/tasks`: the task as of this event (its status and time), with result/error/inputRequests. */
  private async notify(subscription: TaskSubscription, event: TaskEvent, tag: JsonObject, write: (message: unknown) => void): Promise<void> {
    const record = await subscription.read(event.taskId);
    if (!record) return;
    const asOfEvent = withPollHint({ ...record, status: event.status, lastUpdatedAt: event.at }, this.deps.clock.now());
    const detailed = detailedTask(asOfEvent, await subscription.details(asOfEvent));
    // The answer that resumed a task commits an `input` event (still input_required) and the `working` one together;
    // by the time we read, nothing is outstanding, and an input_required task without requests is never a valid view.
    if (detailed.status === 'input_required' && Object.keys(detailed.inputRequests ?? {}).length === 0) return;
    write({ jsonrpc: '2.0', method: 'notifications/tasks', params: { ...detailed, _meta: { ...tag, ...attemptMeta(record.attempt) } } });
  }
}

/**
 * Holds the events a subscription delivers until the stream attaches its handler, so none committed between the
 * subscription and the first write is lost.
 */
class EventRelay {
  private held: TaskEvent[] | undefined = [];
  private handler: ((event: TaskEvent) => void) | undefined;

  push(event: TaskEvent): void {
    if (this.handler) this.handler(event);
    else this.held?.push(event);
  }

  attach(handler: (event: TaskEvent) => void): void {
    this.handler = handler;
    for (const event of this.held ?? []) handler(event);
    this.held = undefined;
  }
}

function writeJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}
