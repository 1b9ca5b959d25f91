/**
 * The registry: every check `verify` knows, in report order (contract, security, recovery, cancellation,
 * compatibility, load). `verify --list` prints it; `--only` / `--exclude` select from it.
 */
import type { CheckDefinition } from '../check.js';
import { cancellationChecks } from './cancellation.js';
import { compatibilityChecks } from './compatibility.js';
import { contractBothChecks } from './contract-both.js';
import { contractV1Checks } from './contract-v1.js';
import { contractV2Checks } from './contract-v2.js';
import { contractV2StreamChecks } from './contract-v2-streams.js';
import { loadChecks } from './load.js';
import { recoveryChecks } from './recovery.js';
import { securityChecks } from './security.js';

/** Every check, each id once. */
export const ALL_CHECKS: readonly CheckDefinition[] = Object.freeze([
  ...contractV1Checks,
  ...contractV2Checks,
  ...contractV2StreamChecks,
  ...contractBothChecks,
  ...securityChecks,
  ...recoveryChecks,
  ...cancellationChecks,
  ...compatibilityChecks,
  ...loadChecks,
]);
