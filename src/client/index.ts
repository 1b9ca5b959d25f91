/**
 * `mcp-tasks/client` — the requestor library for durable MCP tasks over both generations (2025-11-25 tasks, the
 * 2026-07-28 Tasks Extension). This file is the complete public surface: every export here is public API.
 */
export {
  connectTasksClient,
  TasksClient,
  type AnswerReport,
  type AnswerTaskOptions,
  type CallToolOptions,
  type ConnectTasksClientOptions,
} from './tasks-client.js';
export { TaskJournal, type JournalEntry, type PendingCallEntry } from './journal.js';
export type { CapabilityManifest, SessionEvidence, TaskOperation, ToolTaskMode } from '../protocol/manifest.js';
export type { CallNeeds, Fallback, HandoffRecord, JobApi, JobApiRequest, TaskPolicy } from './router.js';
export type { Budgets } from './budgets.js';
export {
  TasksClientError,
  CapabilityMissingError,
  TaskOutcomeUnknownError,
  type OutcomeUnknownReason,
  TasksConnectionError,
  ToolCallOutcomeUnknownError,
  TasksProtocolError,
  TaskNotFoundError,
  TaskFailedError,
  TaskCancelledError,
  TaskTimeoutError,
  TaskNotTerminalError,
  InputNotAnsweredError,
} from './errors.js';
export type { ElicitAnswer, ElicitationParams, InputContext, InputHandler, InputRequest } from './input.js';
export type { TaskSubscription } from './listen.js';
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
