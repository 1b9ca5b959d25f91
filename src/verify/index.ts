/**
 * The contract, fault, security and load suite for any MCP tasks server (`mcp-tasks verify`): the check registry,
 * the runner and the three report formats.
 */
export { type CheckDefinition, type CheckResult, type CheckStatus, type Gate, GATES, type Generation, HARD_GATES, type Severity } from './check.js';
export { ALL_CHECKS } from './checks/index.js';
export { TargetUnreachableError } from './probe.js';
export { renderJunit } from './report/junit.js';
export { renderCheckList, renderText } from './report/text.js';
export { checkSpecLink, specLink } from './rules.js';
export { type GateSummary, runVerify, selectChecks, VerifyExit, type VerifyOptions, type VerifyReport } from './runner.js';
export {
  DEFAULT_ROLES,
  DEFAULT_THRESHOLDS,
  loadToolMap,
  parseThresholds,
  resolveToolMap,
  type Thresholds,
  type ToolMap,
  ToolMapError,
  type ToolMapFile,
} from './tool-map.js';
