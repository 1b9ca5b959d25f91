/** The dashboard's JSON API as the page uses it (shapes mirror `src/dashboard/views.ts`). */

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

export interface TaskSummary {
  taskId: string;
  seq: number;
  status: TaskStatus;
  tool: string;
  generation: 'v1' | 'v2';
  owner: string;
  createdAt: number;
  lastUpdatedAt: number;
  statusMessage: string | null;
  progress: { done: number; total: number } | null;
  attempt: number;
}

export interface BoundedJson {
  text: string;
  truncated: boolean;
  chars: number;
}

export interface JsonSchemaProperty {
  type?: string;
  title?: string;
  description?: string;
  enum?: unknown[];
  oneOf?: Array<{ const?: unknown; title?: string }>;
  enumNames?: string[];
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  default?: unknown;
  items?: { type?: string; enum?: unknown[]; anyOf?: Array<{ const?: unknown; title?: string }> };
}

export interface Question {
  key: string;
  message: string;
  mode: 'form' | 'url';
  requestedSchema: { type?: string; properties?: Record<string, JsonSchemaProperty>; required?: string[] } | null;
  url: string | null;
}

export interface TaskPage {
  task: TaskSummary & { arguments: BoundedJson; ttlMs: number | null; expiresAt: number | null; protocolVersion: string };
  events: Array<{ seq: number; kind: string; status: TaskStatus; at: number; detail: string | null }>;
  result: BoundedJson | null;
  error: BoundedJson | null;
  questions: Question[];
  permissions: { cancel: boolean; answer: boolean };
  operations: null;
}

export interface Session {
  owner: string;
  scopes: string[];
  csrf: string;
  signedIn: boolean;
}

/** An API answer other than 2xx. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

let csrf = '';

async function call<T>(path: string, init: RequestInit = {}): Promise<T> {
  const response = await fetch(`/dashboard/api${path}`, {
    ...init,
    credentials: 'same-origin',
    headers: { accept: 'application/json', ...(init.method === 'POST' ? { 'content-type': 'application/json', 'x-csrf-token': csrf } : {}) },
  });
  if (response.status === 401) {
    location.assign('/dashboard/login');
    throw new ApiError(401, 'Signed out');
  }
  if (response.status === 204) return undefined as T;
  const body = (await response.json().catch(() => ({}))) as { error?: string };
  if (!response.ok) throw new ApiError(response.status, body.error ?? `HTTP ${response.status}`);
  return body as T;
}

export async function session(): Promise<Session> {
  const value = await call<Session>('/session');
  csrf = value.csrf;
  return value;
}

export const listTasks = (query: URLSearchParams): Promise<{ tasks: TaskSummary[]; nextBefore: number | null }> => call(`/tasks?${query.toString()}`);
export const getTask = (taskId: string): Promise<TaskPage> => call(`/tasks/${encodeURIComponent(taskId)}`);
export const cancelTask = (taskId: string): Promise<{ cancelled: boolean }> => call(`/tasks/${encodeURIComponent(taskId)}/cancel`, { method: 'POST', body: '{}' });
export const answerTask = (taskId: string, responses: Record<string, unknown>): Promise<{ accepted: string[] }> =>
  call(`/tasks/${encodeURIComponent(taskId)}/answer`, { method: 'POST', body: JSON.stringify({ responses }) });
export const logout = (): Promise<void> => call('/logout', { method: 'POST', body: '{}' });
