/**
 * `mcp-tasks/testing`: helpers for testing tools, stores and servers built on mcp-tasks. Uses vitest (an optional
 * peer dependency) for the store contract suite.
 */
export { FakeClock } from './fake-clock.js';
export { describeTaskStoreContract, type TaskStoreFixture } from './store-contract.js';
export {
  checkStoreIntegrity,
  postgresSnapshot,
  type SnapshotSource,
  sqliteSnapshot,
  STORE_TABLES,
  type StoreRow,
  type StoreSnapshot,
} from './store-integrity.js';
export { waitForTaskStatus } from './waiters.js';
