/**
 * `mcp-tasks/client` — the requestor library for durable MCP tasks over both generations (2025-11-25 tasks, the
 * 2026-07-28 Tasks Extension). This file is the complete public surface: every export here is public API.
 */
export type { CapabilityManifest, SessionEvidence, TaskOperation, ToolTaskMode } from '../protocol/manifest.js';
export type { Budgets } from './budgets.js';
export {
  CapabilityMissingError,
  InputNotAnsweredError,
  type OutcomeUnknownReason,
  TaskCancelledError,
  TaskFailedError,
  TaskNotFoundError,
  TaskNotTerminalError,
  TaskOutcomeUnknownError,
  TasksClientError,
  TasksConnectionError,
  TasksProtocolError,
  TaskTimeoutError,
  ToolCallFailedError,
  ToolCallOutcomeUnknownError,
  ToolCallRefusedError,
} from './errors.js';
export type { ElicitAnswer, ElicitationParams, InputContext, InputHandler, InputRequest } from './input.js';
export { type JournalEntry, type PendingCallEntry, TaskJournal } from './journal.js';
export type { TaskSubscription } from './listen.js';
export { type ResultReadOptions, resultResourceSize, resultResourceUri, type ResultWritten } from './result-resource.js';
export type { CallNeeds, Fallback, HandoffRecord, JobApi, JobApiRequest, TaskPolicy } from './router.js';
export {
  type AnswerReport,
  type AnswerTaskOptions,
  type CallToolOptions,
  connectTasksClient,
  type ConnectTasksClientOptions,
  TasksClient,
} from './tasks-client.js';
export type {
  CallIdentity,
  CallToolOutcome,
  CallToolResult,
  ConnectionEvent,
  JsonRpcErrorObject,
  ProtocolChoice,
  TaskGeneration,
  TaskSnapshot,
  TaskStatus,
  WaitOptions,
} from './types.js';
