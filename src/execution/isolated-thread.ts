import type { MessagePort } from 'node:worker_threads';
import { TasksError } from '../core/errors.js';
import { StoreError } from '../core/store-error.js';
import type { ExecutionHost, ExecutionOutcome, ExecutionRequest } from '../core/executor.js';
import type { JsonValue } from '../core/task.js';
import type { OperationRecord, OperationSettlement } from '../core/ledger.js';
import type { ElicitRequest, ElicitResult, OperationSpec } from '../core/tool.js';
import { ToolRegistry } from '../core/tool-registry.js';
import { loadToolSources, type ToolModuleOptions, type ToolSource } from '../core/tool-source.js';
import { InProcessExecutor } from './in-process-executor.js';
import type { CrossedError, HostMethod, HostReply, ThreadMessage } from './isolated-messages.js';

/**
 * The body of a thread of the isolated executor's pool (a piscina task module): it loads the tools from their
 * sources once per thread, then runs each call with the in-process executor against a host whose every operation
 * is a message on the call's port. The run's signal is aborted by an `abort` message — a tool that blocks its
 * thread never reads it, and is then ended with its thread by the pool (see `IsolatedExecutor`).
 */

/** One call handed to a thread. */
export interface ThreadTask {
  sources: ToolSource[];
  moduleOptions: ToolModuleOptions;
  request: ExecutionRequest;
  /** This call's end of a `MessageChannel` (transferred). */
  port: MessagePort;
}

const executors = new Map<string, Promise<InProcessExecutor>>();

/** The executor of this thread for one set of sources (loaded once; the same sources on every call of a pool). */
function executorFor(sources: ToolSource[], moduleOptions: ToolModuleOptions): Promise<InProcessExecutor> {
  const key = JSON.stringify([sources, moduleOptions]);
  let executor = executors.get(key);
  if (!executor) {
    executor = loadToolSources(sources, moduleOptions).then((tools) => new InProcessExecutor(new ToolRegistry(tools)));
    executors.set(key, executor);
  }
  return executor;
}

/** Run one call (see the module comment). */
export default async function runInThread(task: ThreadTask): Promise<ExecutionOutcome> {
  const { port } = task;
  const controller = new AbortController();
  const pending = new Map<number, { resolve: (value: JsonValue | undefined) => void; reject: (error: Error) => void }>();
  let nextId = 0;
  port.on('message', (message: HostReply) => {
    if (message.op === 'abort') {
      if (!controller.signal.aborted) controller.abort(message.reason);
      return;
    }
    const waiter = pending.get(message.id);
    if (!waiter) return;
    pending.delete(message.id);
    if (message.ok) waiter.resolve(message.value);
    else waiter.reject(rebuilt(message.error));
  });
  const send = (message: ThreadMessage): void => port.postMessage(message);
  const call = (method: HostMethod, args: JsonValue[]): Promise<JsonValue | undefined> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      send({ op: 'call', id, method, args });
    });
  const host: ExecutionHost = {
    setStatus: (message) => send({ op: 'setStatus', message }),
    progress: (done, total, message) => send({ op: 'progress', done, total, message }),
    log: (entry) => send({ op: 'log', entry }),
    getStep: async (name) => (await call('getStep', [name])) as { value: JsonValue } | undefined,
    putStep: async (name, value) => {
      await call('putStep', [name, value]);
    },
    getOwnerState: (key) => call('getOwnerState', [key]),
    putOwnerState: async (key, value) => {
      await call('putOwnerState', [key, value]);
    },
    openOperation: async (spec: OperationSpec) => (await call('openOperation', [spec as unknown as JsonValue])) as unknown as { operation: OperationRecord; opened: boolean },
    settleOperation: async (operationId: string, settlement: Omit<OperationSettlement, 'now'>) =>
      (await call('settleOperation', [operationId, settlement as unknown as JsonValue])) as unknown as OperationRecord | undefined,
    elicit: async (requests: readonly ElicitRequest[]) => (await call('elicit', [requests as unknown as JsonValue])) as unknown as { answers: ElicitResult[] } | { parked: true },
  };
  try {
    const executor = await executorFor(task.sources, task.moduleOptions);
    return await executor.execute(task.request, host, controller.signal);
  } finally {
    port.close();
  }
}

/** The error a host operation threw, as the tool would have seen it in process. */
function rebuilt(error: CrossedError): Error {
  if (error.code !== undefined) return new TasksError(error.code, error.message, error.data);
  if (error.storeCode !== undefined) return new StoreError(error.storeCode, error.message);
  return new Error(error.message);
}
