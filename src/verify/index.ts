/**
 * The contract, fault, security and load suite for any MCP tasks server (`mcp-tasks verify`): the check registry,
 * the runner and the three report formats.
 */
export { ALL_CHECKS } from './checks/index.js';
export { GATES, HARD_GATES, type CheckDefinition, type CheckResult, type CheckStatus, type Gate, type Generation, type Severity } from './check.js';
export { runVerify, selectChecks, VerifyExit, type GateSummary, type VerifyOptions, type VerifyReport } from './runner.js';
export {
  loadToolMap,
  parseThresholds,
  resolveToolMap,
  DEFAULT_ROLES,
  DEFAULT_THRESHOLDS,
  ToolMapError,
  type ToolMap,
  type ToolMapFile,
  type Thresholds,
} from './tool-map.js';
export { checkSpecLink, specLink } from './rules.js';
export { TargetUnreachableError } from './probe.js';
export { renderCheckList, renderText } from './report/text.js';
export { renderJunit } from './report/junit.js';
