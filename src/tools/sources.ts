import type { ToolSource } from '../core/tool-source.js';

/** The built-in tools (`analyze_logs`, `audit_repository`, and `cleanup_logs` with a writable root). */
export const BUILTIN_TOOL_SOURCE: ToolSource = Object.freeze({ module: new URL('./builtin.js', import.meta.url).href });

/** The fixture tools the official conformance suite calls (`--fixtures conformance`). */
export const CONFORMANCE_FIXTURE_SOURCE: ToolSource = Object.freeze({
  module: new URL('./fixtures/conformance.js', import.meta.url).href,
  export: 'conformanceFixtureTools',
});

/** The `mcp-tasks verify` fixtures (`--fixtures verify`): the conformance tools plus a side-effect counter. */
export const VERIFY_FIXTURE_SOURCE: ToolSource = Object.freeze({ module: new URL('./fixtures/verify.js', import.meta.url).href, export: 'verifyFixtureTools' });
