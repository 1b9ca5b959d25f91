/**
 * `mcp-tasks/testing`: helpers for testing tools, stores and servers built on mcp-tasks. Uses vitest (an optional
 * peer dependency) for the store contract suite.
 */
export { FakeClock } from './fake-clock.js';
export { describeTaskStoreContract, type TaskStoreFixture } from './store-contract.js';
export { waitForTaskStatus } from './waiters.js';
export {
  checkStoreIntegrity,
  postgresSnapshot,
  sqliteSnapshot,
  STORE_TABLES,
  type SnapshotSource,
  type StoreRow,
  type StoreSnapshot,
} from './store-integrity.js';
