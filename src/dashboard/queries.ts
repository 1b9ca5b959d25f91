import { TasksError } from '../core/errors.js';
import type { OperationStatus } from '../core/ledger.js';
import type { TaskStatus } from '../core/task.js';
import { ErrorCode } from '../protocol/constants.js';
import type { ViewerOperationQuery } from '../service/viewer/operations.js';
import type { ViewerQuery } from '../service/viewer/viewer.js';

/** Largest page of the task list. */
const PAGE_SIZE_MAX = 200;
/** Page size when the query names none (what the page asks for). */
const PAGE_SIZE_DEFAULT = 50;
/** Most ledger rows the operations view lists. */
const OPERATIONS_MAX = 500;
const STATUSES: readonly TaskStatus[] = ['working', 'input_required', 'completed', 'failed', 'cancelled'];
const OPERATION_STATUSES: readonly OperationStatus[] = ['pending', 'confirmed', 'failed', 'unknown'];

function badParams(message: string): TasksError {
  return new TasksError(ErrorCode.InvalidParams, message);
}

/**
 * The task list's query from the URL's parameters — those of `/dashboard/api/tasks` and of the page `/dashboard`
 * alike: `status` (comma-separated), `tool`, `q` (at most 200 characters), `from`, `to` (epoch ms), `before` (the
 * keyset cursor) and `limit` (at most 200).
 * @throws TasksError `-32602` (HTTP 400) for a number that is not a non-negative integer.
 */
export function taskListQuery(params: URLSearchParams): ViewerQuery {
  const statuses = (params.get('status') ?? '').split(',').filter((value): value is TaskStatus => (STATUSES as readonly string[]).includes(value));
  const number = (name: string): number | undefined => {
    const raw = params.get(name);
    if (raw === null || raw === '') return undefined;
    const value = Number(raw);
    if (!Number.isSafeInteger(value) || value < 0) throw badParams(`${name} must be a non-negative integer`);
    return value;
  };
  const limit = Math.min(number('limit') ?? PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX);
  const tool = params.get('tool') ?? '';
  const text = (params.get('q') ?? '').slice(0, 200);
  const from = number('from');
  const to = number('to');
  const before = number('before');
  return {
    limit: Math.max(limit, 1),
    ...(statuses.length > 0 ? { statuses } : {}),
    ...(tool ? { toolName: tool } : {}),
    ...(text ? { text } : {}),
    ...(from === undefined ? {} : { createdFrom: from }),
    ...(to === undefined ? {} : { createdTo: to }),
    ...(before === undefined ? {} : { beforeSeq: before }),
  };
}

/**
 * The operations view's query: `?status=unknown,pending` (default: `unknown`, the rows an operator must decide) or
 * `?status=all`, at most {@link OPERATIONS_MAX} rows.
 * @throws TasksError `-32602` (HTTP 400) for an unknown status.
 */
export function operationListQuery(params: URLSearchParams): ViewerOperationQuery {
  const raw = params.get('status') ?? 'unknown';
  const statuses = raw === 'all' ? undefined : raw.split(',').filter((value) => value !== '');
  for (const status of statuses ?? [])
    if (!(OPERATION_STATUSES as readonly string[]).includes(status)) throw badParams(`status must be all or a list of ${OPERATION_STATUSES.join(', ')}`);
  return { ...(statuses && statuses.length > 0 ? { statuses: statuses as OperationStatus[] } : {}), limit: OPERATIONS_MAX };
}
