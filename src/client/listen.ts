import { randomUUID } from 'node:crypto';

import { z } from 'zod';

import { SUBSCRIPTION_ID_META_KEY } from '../protocol/constants.js';
import type { JsonValue } from '../protocol/types.js';
import { toClientError } from './error-mapping.js';
import { TasksConnectionError, TasksProtocolError } from './errors.js';
import type { TaskSnapshot } from './types.js';
import { type ModernEndpoint, modernMeta, postModern, sseMessages } from './v2-http.js';
import { fromV2Task, V2DetailedTaskSchema } from './wire-schemas.js';

/**
 * Task notifications over 2026-07-28 `subscriptions/listen` with the Tasks Extension filter
 * `notifications.taskIds` (SEP-2663 E33–E37, base B18/B19): one POST whose SSE response carries the
 * acknowledgement, then one `notifications/tasks` (a complete `DetailedTask`) per change of a subscribed task.
 */

/** An open subscription: the task ids the server agreed to, and the snapshots it pushes. */
export interface TaskSubscription extends AsyncIterable<TaskSnapshot> {
  /** The subscribed ids the server accepted (only the caller's own tasks, E45), in the server's order. */
  readonly taskIds: readonly string[];
  /**
   * How the stream ended, once it has: `graceful` (the server answered the listen request, e.g. on shutdown),
   * `remote` (the connection ended without that answer), `local` ({@link close} or the signal), or `done`
   * (every accepted task reached a terminal status). `undefined` while it is open.
   */
  readonly ended: 'graceful' | 'remote' | 'local' | 'done' | undefined;
  /** Close the stream (idempotent). Iteration then ends. */
  close(): void;
}

const AckSchema = z.looseObject({
  method: z.literal('notifications/subscriptions/acknowledged'),
  params: z.looseObject({
    notifications: z.looseObject({ taskIds: z.array(z.string()).optional() }).optional(),
    _meta: z.record(z.string(), z.unknown()).optional(),
  }),
});
const NotificationSchema = z.looseObject({ method: z.string(), params: z.record(z.string(), z.unknown()).optional() });
const ResponseSchema = z.looseObject({
  id: z.union([z.string(), z.number()]),
  result: z.unknown().optional(),
  error: z.object({ code: z.number(), message: z.string(), data: z.unknown().optional() }).optional(),
});

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/**
 * Subscribe to task notifications. Resolves once the server acknowledged (B18), so no change after the
 * acknowledgement can be missed.
 * @throws TasksProtocolError with the server's code when it refused (e.g. `-32021` without the extension, a 404
 *   `-32601` from a server without listen), or when the stream does not start with the acknowledgement.
 * @throws TasksConnectionError for network failures and HTTP errors without a JSON-RPC body; the signal's reason.
 */
export async function listenToTasks(endpoint: ModernEndpoint, taskIds: readonly string[], signal?: AbortSignal): Promise<TaskSubscription> {
  const id = `listen-${randomUUID()}`;
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  const url = endpoint.url.href;
  let response: Response;
  try {
    response = await postModern(
      endpoint,
      { id, method: 'subscriptions/listen', params: { notifications: { taskIds: [...taskIds] }, _meta: modernMeta(endpoint) } },
      { signal: controller.signal },
    );
  } catch (error) {
    signal?.removeEventListener('abort', onAbort);
    throw toClientError(error, 'subscriptions/listen', url);
  }
  const type = response.headers.get('content-type') ?? '';
  if (!response.ok || !type.includes('text/event-stream') || !response.body) {
    signal?.removeEventListener('abort', onAbort);
    throw await refusal(response, url);
  }
  const messages = sseMessages(response.body);
  const close = (): void => {
    signal?.removeEventListener('abort', onAbort);
    controller.abort();
  };
  const first = await messages.next().catch((error: unknown) => {
    close();
    throw toClientError(error, 'subscriptions/listen', url);
  });
  const ack = AckSchema.safeParse(first.value);
  if (first.done || !ack.success || ack.data.params._meta?.[SUBSCRIPTION_ID_META_KEY] !== id) {
    close();
    await messages.return(undefined);
    throw new TasksProtocolError(`subscriptions/listen: the stream from ${url} did not start with its acknowledgement (B18)`);
  }
  const accepted = ack.data.params.notifications?.taskIds?.filter((taskId) => taskIds.includes(taskId)) ?? [];
  return new Subscription(id, url, accepted, messages, controller.signal, close);
}

class Subscription implements TaskSubscription {
  ended: TaskSubscription['ended'];
  private readonly open: Set<string>;

  constructor(
    private readonly id: string,
    private readonly url: string,
    readonly taskIds: readonly string[],
    private readonly messages: AsyncGenerator<unknown>,
    private readonly signal: AbortSignal,
    readonly close: () => void,
  ) {
    this.open = new Set(taskIds);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<TaskSnapshot> {
    try {
      if (this.open.size === 0) return this.finish('done');
      for (;;) {
        let next: IteratorResult<unknown>;
        try {
          next = await this.messages.next();
        } catch (error) {
          if (this.signal.aborted) return this.finish('local');
          this.finish('remote');
          throw toClientError(error, 'subscriptions/listen', this.url);
        }
        if (next.done) return this.finish(this.signal.aborted ? 'local' : 'remote');
        const response = ResponseSchema.safeParse(next.value);
        if (response.success && response.data.id === this.id) {
          if (response.data.error)
            throw new TasksProtocolError(
              `subscriptions/listen: ${response.data.error.message} (JSON-RPC ${response.data.error.code})`,
              response.data.error.code,
              response.data.error.data as JsonValue | undefined,
            );
          return this.finish('graceful');
        }
        const snapshot = this.snapshotOf(next.value);
        if (!snapshot) continue;
        yield snapshot;
        if (TERMINAL.has(snapshot.status)) this.open.delete(snapshot.taskId);
        if (this.open.size === 0) return this.finish('done');
      }
    } finally {
      this.ended ??= 'local';
      this.close();
    }
  }

  /** A `notifications/tasks` of this subscription for an accepted task, as a snapshot; anything else is skipped. */
  private snapshotOf(message: unknown): TaskSnapshot | undefined {
    const notification = NotificationSchema.safeParse(message);
    if (!notification.success || notification.data.method !== 'notifications/tasks' || !notification.data.params) return undefined;
    const { _meta: meta, ...task } = notification.data.params as { _meta?: Record<string, unknown> };
    if (meta?.[SUBSCRIPTION_ID_META_KEY] !== this.id) return undefined; // B19: another subscription's message
    // The rest of `_meta` (the attempt, domain operations) belongs to the task.
    const parsed = V2DetailedTaskSchema.safeParse({ ...task, _meta: meta });
    if (!parsed.success) throw new TasksProtocolError(`notifications/tasks: invalid DetailedTask (${z.prettifyError(parsed.error)})`);
    return this.taskIds.includes(parsed.data.taskId) ? fromV2Task(parsed.data) : undefined;
  }

  private finish(how: NonNullable<TaskSubscription['ended']>): void {
    this.ended = how;
  }
}

/** The error for a listen request the server did not turn into a stream. */
async function refusal(response: Response, url: string): Promise<Error> {
  const text = await response.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; data?: unknown } };
    if (typeof body.error?.code === 'number') {
      return new TasksProtocolError(
        `subscriptions/listen: ${String(body.error.message)} (JSON-RPC ${body.error.code})`,
        body.error.code,
        body.error.data as JsonValue | undefined,
      );
    }
  } catch {
    // Not a JSON-RPC body: report the HTTP status.
  }
  if (!response.ok)
    return new TasksConnectionError(`subscriptions/listen: HTTP ${response.status} from ${url}`, response.status >= 500 || response.status === 429, {
      httpStatus: response.status,
    });
  return new TasksProtocolError(
    `subscriptions/listen: ${url} answered with ${response.headers.get('content-type') ?? 'no content type'} instead of an event stream`,
  );
}
