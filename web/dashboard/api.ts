/** The dashboard's JSON API as the page uses it (shapes in `src/dashboard/wire.ts`, shared with the server). */
import type {
  InitialView,
  KillSwitchPanelView,
  OperationListView,
  OperationView,
  OverviewView,
  QuestionView,
  ReconcileView,
  SchemaProperty,
  SessionView,
  TaskListView,
  TaskPageView,
  TaskStatusName,
  TaskSummary,
  UpstreamsView,
} from '../../src/dashboard/wire.js';

export type { TaskSummary };
export type TaskStatus = TaskStatusName;
export type JsonSchemaProperty = SchemaProperty;
export type Question = QuestionView;
export type TaskPage = TaskPageView;
export type Session = SessionView;
export type Operation = OperationView;
export type Overview = OverviewView;
export type Upstreams = UpstreamsView;
export type Reconciled = ReconcileView;

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

/** The data the server wrote into the page (`#initial-data`), read once; `undefined` when there is none. */
const initial: InitialView | undefined = (() => {
  const text = document.getElementById('initial-data')?.textContent;
  try {
    return text ? (JSON.parse(text) as InitialView) : undefined;
  } catch {
    return undefined;
  }
})();

/**
 * The initial view's `key` when the page is still at the URL the server wrote it for, once (issue 26 item 15: the
 * first view renders without a request; every later render asks the API).
 */
function takeInitial<K extends 'tasks' | 'task'>(key: K): InitialView[K] | undefined {
  if (!initial || initial.url !== location.pathname + location.search) return undefined;
  const value = initial[key];
  delete initial[key];
  return value;
}

/** The signed-in viewer: from the page itself when the server wrote it there, else asked. */
export async function session(): Promise<Session> {
  const value = initial?.session ?? (await call<Session>('/session'));
  csrf = value.csrf;
  return value;
}

export const listTasks = async (query: URLSearchParams): Promise<TaskListView> => takeInitial('tasks') ?? call(`/tasks?${query.toString()}`);
export const getTask = async (taskId: string): Promise<TaskPage> => takeInitial('task') ?? call(`/tasks/${encodeURIComponent(taskId)}`);
export const cancelTask = (taskId: string): Promise<{ cancelled: boolean }> =>
  call(`/tasks/${encodeURIComponent(taskId)}/cancel`, { method: 'POST', body: '{}' });
export const answerTask = (taskId: string, responses: Record<string, unknown>): Promise<{ accepted: string[] }> =>
  call(`/tasks/${encodeURIComponent(taskId)}/answer`, { method: 'POST', body: JSON.stringify({ responses }) });
export const logout = (): Promise<void> => call('/logout', { method: 'POST', body: '{}' });
export const listOperations = (status: string): Promise<OperationListView> => call(`/operations?status=${encodeURIComponent(status)}`);
export const reconcileOperation = (operationId: string): Promise<ReconcileView> =>
  call(`/operations/${encodeURIComponent(operationId)}/reconcile`, { method: 'POST', body: '{}' });
export const getOverview = (): Promise<OverviewView> => call('/overview');
export const getUpstreams = (): Promise<UpstreamsView> => call('/upstreams');
export type KillSwitchPanel = KillSwitchPanelView;
export const getKillSwitch = (): Promise<KillSwitchPanelView> => call('/kill-switch');
export const changeKillSwitch = (change: { action: 'on' | 'off'; tool?: string; fallback?: string; reason?: string }): Promise<KillSwitchPanelView> =>
  call('/kill-switch', { method: 'POST', body: JSON.stringify(change) });
