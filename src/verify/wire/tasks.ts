/**
 * Task operations of either generation behind one shape, so a check that means the same thing on both (cancel a
 * working task, guess ids, plant text) is written once. A v1 wire is bound to one 2025-11-25 session, a v2 wire to
 * one principal; both send exactly what their generation's spec says and parse nothing they do not have to.
 */
import type { Generation } from '../check.js';
import type { WireAnswer } from './exchange.js';
import { DECLARING_CAPABILITIES, type Endpoint, type V1Session, v2Request } from './requests.js';

/** The task fields every status answer has, plus the raw object. */
export interface TaskState {
  taskId: string;
  status: string;
  statusMessage?: string;
  pollIntervalMs?: number;
  raw: Record<string, unknown>;
}

/** Terminal statuses (R16, E12). */
export const TERMINAL_STATUSES: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

/** Options of a task-creating call. */
export interface CallOptions {
  /** v1 only: the `task` param (`false`: none, a plain call). @defaultValue `{}` */
  task?: Record<string, unknown> | false;
  /** v2 only: the request's client capabilities. @defaultValue declaring the extension */
  capabilities?: Record<string, unknown>;
  /** Extra `_meta` of the call. */
  meta?: Record<string, unknown>;
  timeoutMs?: number;
}

/** Operations on tasks, in one generation. */
export interface TaskWire {
  readonly generation: Generation;
  /** `tools/call` — a task request (v1 `params.task`; v2 a declaring request). */
  call(tool: string, args: Record<string, unknown>, options?: CallOptions): Promise<WireAnswer>;
  /** The task of a `CreateTaskResult` (v1 nested under `task`, v2 flat with `resultType: "task"`), if it is one. */
  createdTask(answer: WireAnswer): TaskState | undefined;
  get(taskId: string, options?: { meta?: Record<string, unknown>; timeoutMs?: number }): Promise<WireAnswer>;
  cancel(taskId: string, options?: { timeoutMs?: number }): Promise<WireAnswer>;
  /** The task in a `tasks/get` (or v1 `tasks/cancel`) answer, if it is one. */
  taskOf(answer: WireAnswer): TaskState | undefined;
}

function asTask(value: unknown): TaskState | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const raw = value as Record<string, unknown>;
  if (typeof raw.taskId !== 'string' || typeof raw.status !== 'string') return undefined;
  const pollInterval = typeof raw.pollInterval === 'number' ? raw.pollInterval : typeof raw.pollIntervalMs === 'number' ? raw.pollIntervalMs : undefined;
  return {
    taskId: raw.taskId,
    status: raw.status,
    ...(typeof raw.statusMessage === 'string' ? { statusMessage: raw.statusMessage } : {}),
    ...(pollInterval === undefined ? {} : { pollIntervalMs: pollInterval }),
    raw,
  };
}

/** Task operations in a 2025-11-25 session. */
export class V1TaskWire implements TaskWire {
  readonly generation = 'v1' as const;
  constructor(readonly session: V1Session) {}

  call(tool: string, args: Record<string, unknown>, options: CallOptions = {}): Promise<WireAnswer> {
    const task = options.task === undefined ? {} : options.task;
    return this.session.request(
      'tools/call',
      { name: tool, arguments: args, ...(task === false ? {} : { task }), ...(options.meta ? { _meta: options.meta } : {}) },
      options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs },
    );
  }

  createdTask(answer: WireAnswer): TaskState | undefined {
    return asTask(answer.response?.result?.task);
  }

  get(taskId: string, options: { meta?: Record<string, unknown>; timeoutMs?: number } = {}): Promise<WireAnswer> {
    return this.session.request(
      'tasks/get',
      { taskId, ...(options.meta ? { _meta: options.meta } : {}) },
      options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs },
    );
  }

  cancel(taskId: string, options: { timeoutMs?: number } = {}): Promise<WireAnswer> {
    return this.session.request('tasks/cancel', { taskId }, options);
  }

  /** `tasks/result` (blocks until terminal, R24); `onMessage` sees server→client requests on its stream. */
  result(
    taskId: string,
    options: { timeoutMs?: number; onMessage?: (message: unknown) => void | Promise<void>; meta?: Record<string, unknown> } = {},
  ): Promise<WireAnswer> {
    return this.session.request(
      'tasks/result',
      { taskId, ...(options.meta ? { _meta: options.meta } : {}) },
      { ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }), ...(options.onMessage ? { onMessage: options.onMessage } : {}) },
    );
  }

  /** `tasks/list` with an optional cursor. */
  list(cursor?: string): Promise<WireAnswer> {
    return this.session.request('tasks/list', cursor === undefined ? {} : { cursor });
  }

  taskOf(answer: WireAnswer): TaskState | undefined {
    return asTask(answer.response?.result);
  }
}

/** Task operations of one principal on the 2026-07-28 wire. */
export class V2TaskWire implements TaskWire {
  readonly generation = 'v2' as const;
  constructor(
    readonly endpoint: Endpoint,
    readonly token: string | undefined,
  ) {}

  private options(extra: { capabilities?: Record<string, unknown>; meta?: Record<string, unknown>; timeoutMs?: number } = {}): Parameters<typeof v2Request>[3] {
    return {
      ...(this.token === undefined ? {} : { token: this.token }),
      capabilities: extra.capabilities ?? DECLARING_CAPABILITIES,
      ...(extra.meta ? { meta: extra.meta } : {}),
      ...(extra.timeoutMs === undefined ? {} : { timeoutMs: extra.timeoutMs }),
    };
  }

  /** Any 2026-07-28 request as this principal. */
  request(method: string, params: Record<string, unknown> = {}, options: Parameters<typeof v2Request>[3] = {}): Promise<WireAnswer> {
    return v2Request(this.endpoint, method, params, { ...(this.token === undefined ? {} : { token: this.token }), ...options });
  }

  call(tool: string, args: Record<string, unknown>, options: CallOptions = {}): Promise<WireAnswer> {
    return v2Request(this.endpoint, 'tools/call', { name: tool, arguments: args }, this.options(options));
  }

  createdTask(answer: WireAnswer): TaskState | undefined {
    const result = answer.response?.result;
    return result?.resultType === 'task' ? asTask(result) : undefined;
  }

  get(taskId: string, options: { meta?: Record<string, unknown>; timeoutMs?: number } = {}): Promise<WireAnswer> {
    return v2Request(this.endpoint, 'tasks/get', { taskId }, this.options(options));
  }

  cancel(taskId: string, options: { timeoutMs?: number } = {}): Promise<WireAnswer> {
    return v2Request(this.endpoint, 'tasks/cancel', { taskId }, this.options(options));
  }

  /** `tasks/update` with `inputResponses`. */
  update(taskId: string, inputResponses: Record<string, unknown> | undefined): Promise<WireAnswer> {
    return v2Request(this.endpoint, 'tasks/update', { taskId, ...(inputResponses === undefined ? {} : { inputResponses }) }, this.options());
  }

  taskOf(answer: WireAnswer): TaskState | undefined {
    return asTask(answer.response?.result);
  }
}
