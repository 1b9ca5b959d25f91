/**
 * The public server API of `mcp-tasks`. This file is the complete surface of the `.` entry: named exports only;
 * anything added here becomes public API. Store drivers have entries of their own (`mcp-tasks/sqlite`,
 * `mcp-tasks/postgres`), so importing the API loads no database driver; the requestor library is
 * `mcp-tasks/client`, test helpers are `mcp-tasks/testing`.
 */
export { createTasksServer, type CreateTasksServerOptions, type EmbeddedWorkerOptions, type TasksServer } from './server/create-tasks-server.js';
export { createTaskWorker, type CreateTaskWorkerOptions, type TaskWorkerHandle } from './execution/create-task-worker.js';
export type { TaskWorker } from './execution/task-worker.js';
export type { CallOutcome, CallToolOptions, CallService } from './service/calls/call-service.js';
export type { TaskDetails, TaskNotice, TaskPoll, TaskSubscription, TasksDoor } from './service/tasks/tasks-door.js';
export type { ViewerService } from './service/viewer/viewer-service.js';
export type { TaskServices } from './service/services.js';
export type { Actor, ScopeGrant, TaskActor } from './service/access.js';
export type { CallPlan, ToolCall } from './service/calls/call-plan.js';
export type { Caller, Negotiation, TaskCaller } from './service/caller.js';
export type { TaskOperation, TaskOperationContext, TaskServiceHook } from './service/hooks.js';
export type { ExecutionHost, ExecutionLogEntry, ExecutionOutcome, ExecutionRequest, Executor } from './core/executor.js';
export { DEFAULT_LIMITS, resolveLimits, type TasksServerLimits } from './core/limits.js';
export { loadServerSecret } from './server/signing-key.js';
export {
  defineTool,
  localPath,
  textResult,
  ToolInputError,
  type AnyToolDefinition,
  type ContentBlock,
  type PreflightContext,
  type ToolContext,
  type ToolDefinition,
  type ToolExecution,
  type ToolResult,
} from './core/tool.js';
export { serverStatePaths, type PathConfinement, type ServerStateLocations, type ServerStatePath } from './core/confinement.js';
export { confine, resolveInsideRoots, type Confinement } from './tools/roots.js';
export { loadToolSources, toolSourceOf, type ToolModuleOptions, type ToolSource } from './core/tool-source.js';
export { BUILTIN_TOOL_SOURCE } from './tools/sources.js';
export { TasksError } from './core/errors.js';
export { StoreError, type StoreErrorCode } from './core/store-error.js';
export { ErrorCode, TASKS_EXTENSION_ID } from './protocol/constants.js';
export type { TaskEvent, TaskEventKind, TaskScope, TaskStore, TransitionRequest } from './core/store.js';
export type { JsonObject, JsonValue, NewTask, TaskGeneration, TaskOutcome, TaskRecord, TaskStatus } from './core/task.js';
export type { Logger } from './core/logger.js';
export type { Clock } from './core/clock.js';
export { AuthenticationError, ownerKeyOf, type AuthenticationFailure, type Authenticator, type Principal } from './core/owner.js';
export { ScopePolicy } from './core/scopes.js';
export { Scope, TASK_SCOPES, ADMIN_SCOPES } from './protocol/scopes.js';
export { TokenFileAuthenticator, type TokenFile, type TokenFileOptions } from './auth/token-file.js';
export { TokenFileWatcher, type TokenFileWatcherOptions } from './auth/token-file-watcher.js';
export { JwtAuthenticator, DEFAULT_JWT_ALGORITHMS, type JwtAuthenticatorOptions } from './auth/jwt.js';
export { discoverAuthorizationServer, type AuthorizationServerMetadata } from './auth/discovery.js';
export { AesGcmFieldCipher, NO_ENCRYPTION, parseEncryptionKey, type FieldCipher } from './store/field-cipher.js';
