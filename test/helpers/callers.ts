import type { TaskCaller } from '../../src/service/caller.js';

/**
 * The anonymous 2026-07-28 caller that declared the Tasks Extension, as the service sees it (authentication off,
 * every scope): what in-process tests of the worker and the service call with. `clientCapabilities` as given.
 */
export function anonymousV2Caller(clientCapabilities: TaskCaller['clientCapabilities'] = {}): TaskCaller {
  return { ownerKey: 'anonymous', scopes: 'all', negotiation: 'per-request', generation: 'v2', protocolVersion: '2026-07-28', clientCapabilities };
}

/** A form question's schema the tests ask with: `{confirm: boolean}`, required. */
export const CONFIRM_SCHEMA = { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] };
