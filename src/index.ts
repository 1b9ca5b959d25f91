/**
 * The public server API of `mcp-tasks`. This file is the complete surface of the `.` entry: named exports only;
 * anything added here becomes public API. Store drivers have entries of their own (`mcp-tasks/sqlite`,
 * `mcp-tasks/postgres`), so importing the API loads no database driver; the requestor library is
 * `mcp-tasks/client`, test helpers are `mcp-tasks/testing`.
 */
export { type AuthorizationServerMetadata, discoverAuthorizationServer } from './auth/discovery.js';
export { DEFAULT_JWT_ALGORITHMS, JwtAuthenticator, type JwtAuthenticatorOptions } from './auth/jwt.js';
export { type TokenFile, TokenFileAuthenticator, type TokenFileOptions } from './auth/token-file.js';
export { TokenFileWatcher, type TokenFileWatcherOptions } from './auth/token-file-watcher.js';
export type { Clock } from './core/clock.js';
export { type ServerStateLocations, type ServerStatePath, serverStatePaths } from './core/confinement.js';
export type { ExecutionHost, ExecutionLogEntry, ExecutionOutcome, ExecutionRequest, Executor } from './core/executor.js';
export { DEFAULT_LIMITS, resolveLimits, type TasksServerLimits } from './core/limits.js';
export type { Logger } from './core/logger.js';
export { coalesceOutageLogs, flushOutageLogs, OUTAGE_LOG_WINDOW_MS } from './core/outage-log.js';
export { AuthenticationError, type AuthenticationFailure, type Authenticator, ownerKeyOf, type Principal } from './core/owner.js';
// What `TaskStore.schemaStatus()` returns, and the rule a third-party store applies to its own migrations' rows.
export {
  type AppliedMigration,
  judgeSchema,
  mayStartOn,
  type MigrationMark,
  readyOn,
  type SchemaCompatibility,
  type SchemaState,
} from './core/schema-compatibility.js';
export { ScopePolicy } from './core/scopes.js';
export type { TaskEvent, TaskEventKind, TaskScope, TaskStore, TransitionRequest } from './core/store.js';
export { StoreError, type StoreErrorCode } from './core/store-error.js';
export type { JsonObject, JsonValue, NewTask, TaskGeneration, TaskOutcome, TaskRecord, TaskStatus } from './core/task.js';
export { loadToolSources, type ToolModuleOptions, type ToolSource, toolSourceOf } from './core/tool-source.js';
export { createTaskWorker, type CreateTaskWorkerOptions, type TaskWorkerHandle } from './execution/create-task-worker.js';
export type { TaskWorker } from './execution/task-worker.js';
export { ErrorCode, TASKS_EXTENSION_ID } from './protocol/constants.js';
export { ADMIN_SCOPES, Scope, TASK_SCOPES } from './protocol/scopes.js';
export { createTasksServer, type CreateTasksServerOptions, type EmbeddedWorkerOptions, type TasksServer } from './server/create-tasks-server.js';
export { loadServerSecret } from './server/signing-key.js';
export type { Actor, ScopeGrant, TaskActor } from './service/access.js';
export type { Caller, Negotiation, TaskCaller } from './service/caller.js';
export type { CallPlan, ToolCall } from './service/calls/call-plan.js';
export type { CallOutcome, CallService, CallToolOptions } from './service/calls/call-service.js';
export type { TaskOperation, TaskOperationContext, TaskServiceHook } from './service/hooks.js';
export type { TaskServices } from './service/services.js';
export type { TaskDetails, TaskNotice, TaskPoll, TasksDoor, TaskSubscription } from './service/tasks/tasks-door.js';
export type { ViewerService } from './service/viewer/viewer-service.js';
export { AesGcmFieldCipher, type FieldCipher, NO_ENCRYPTION, parseEncryptionKey } from './store/field-cipher.js';
// What a tool module needs (defineTool, textResult, localPath, ToolInputError, TasksError, confine, …) is the
// `mcp-tasks/tool` entry, re-exported here whole so the two never differ.
export * from './tool.js';
export { BUILTIN_TOOL_SOURCE } from './tools/sources.js';
