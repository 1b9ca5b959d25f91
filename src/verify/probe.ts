/**
 * The probe run before any check: per generation, does the server serve it, what does it advertise, which tools
 * does it list. Checks of a generation the server does not serve are skipped with the probe's reason; the contract
 * checks judge what the probe could only observe.
 */
import { TASKS_EXTENSION_ID, V1_PROTOCOL_VERSION, V2_PROTOCOL_VERSION } from '../protocol/constants.js';
import type { Generation } from './check.js';
import type { GenerationProfile, Target, TargetProfile, ToolInfo } from './context.js';
import { describe } from './expect.js';
import { type Exchange, type Recorder, TransportError } from './wire/exchange.js';
import { type Endpoint, SessionOpenError, V1Session, v2Request } from './wire/requests.js';

/** The target did not answer at all (refused, reset, timed out) on any generation. */
export class TargetUnreachableError extends Error {
  override readonly name = 'TargetUnreachableError';
}

/** Most `tools/list` pages read. */
const MAX_TOOL_PAGES = 20;

function toolsOf(result: Record<string, unknown> | undefined): ToolInfo[] {
  const tools = Array.isArray(result?.tools) ? (result.tools as Array<Record<string, unknown>>) : [];
  return tools.flatMap((tool) =>
    typeof tool.name === 'string'
      ? [
          {
            name: tool.name,
            ...(typeof (tool.execution as { taskSupport?: unknown } | undefined)?.taskSupport === 'string'
              ? { taskSupport: (tool.execution as { taskSupport: string }).taskSupport }
              : {}),
          },
        ]
      : [],
  );
}

function why(error: unknown): string {
  if (error instanceof SessionOpenError || error instanceof TransportError) return error.message;
  return error instanceof Error ? error.message : String(error);
}

async function probeV1(endpoint: Endpoint, token: string | undefined): Promise<GenerationProfile> {
  let session: V1Session;
  try {
    session = await V1Session.open(endpoint, token === undefined ? {} : { token });
  } catch (error) {
    return { available: false, reason: `the server does not serve 2025-11-25: ${why(error)}` };
  }
  try {
    if (session.protocolVersion !== V1_PROTOCOL_VERSION)
      return { available: false, reason: `initialize offering 2025-11-25 negotiated ${session.protocolVersion} (no 2025-11-25 tasks)` };
    if (!session.serverCapabilities.tasks) return { available: false, reason: 'the server serves 2025-11-25 but declares no tasks capability (R1)' };
    const tools = new Map<string, ToolInfo>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_TOOL_PAGES; page += 1) {
      const answer = await session.request('tools/list', cursor === undefined ? {} : { cursor });
      if (!answer.response?.result) return { available: false, reason: `tools/list (2025-11-25) failed: ${describe(answer)}` };
      for (const tool of toolsOf(answer.response.result)) tools.set(tool.name, tool);
      cursor = typeof answer.response.result.nextCursor === 'string' ? answer.response.result.nextCursor : undefined;
      if (!cursor) break;
    }
    return { available: true, protocolVersion: session.protocolVersion, capabilities: session.serverCapabilities, tools };
  } catch (error) {
    return { available: false, reason: `probing 2025-11-25 failed: ${why(error)}` };
  } finally {
    await session.close();
  }
}

async function probeV2(endpoint: Endpoint, token: string | undefined): Promise<GenerationProfile> {
  const options = token === undefined ? {} : { token };
  try {
    const discover = await v2Request(endpoint, 'server/discover', {}, options);
    const result = discover.response?.result;
    if (!result) return { available: false, reason: `the server does not serve 2026-07-28: server/discover answered ${describe(discover)}` };
    const versions = Array.isArray(result.supportedVersions) ? result.supportedVersions : [];
    if (!versions.includes(V2_PROTOCOL_VERSION))
      return { available: false, reason: `server/discover lists supportedVersions ${JSON.stringify(versions)} without ${V2_PROTOCOL_VERSION}` };
    const capabilities = (result.capabilities as Record<string, unknown> | undefined) ?? {};
    if (!(capabilities.extensions as Record<string, unknown> | undefined)?.[TASKS_EXTENSION_ID])
      return { available: false, reason: `server/discover does not advertise the ${TASKS_EXTENSION_ID} extension (E1): no 2026-07-28 tasks` };
    const tools = new Map<string, ToolInfo>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_TOOL_PAGES; page += 1) {
      const answer = await v2Request(endpoint, 'tools/list', cursor === undefined ? {} : { cursor }, options);
      if (!answer.response?.result) return { available: false, reason: `tools/list (2026-07-28) failed: ${describe(answer)}` };
      for (const tool of toolsOf(answer.response.result)) tools.set(tool.name, { name: tool.name });
      cursor = typeof answer.response.result.nextCursor === 'string' ? answer.response.result.nextCursor : undefined;
      if (!cursor) break;
    }
    return { available: true, protocolVersion: V2_PROTOCOL_VERSION, capabilities, tools };
  } catch (error) {
    return { available: false, reason: `probing 2026-07-28 failed: ${why(error)}` };
  }
}

/** Probe the generations asked for, as principal A; returns the profile and the probe's evidence. */
export async function probeTarget(
  target: Target,
  generations: readonly Generation[],
  requestTimeoutMs: number,
): Promise<{ profile: TargetProfile; evidence: Exchange[] }> {
  const evidence: Exchange[] = [];
  const started = Date.now();
  const recorder: Recorder = {
    elapsed: () => Date.now() - started,
    record: (exchange) => void evidence.push(exchange),
    tokenLabel: (token) => (token === target.tokenA ? 'token-a' : token === target.tokenB ? 'token-b' : 'other-token'),
  };
  const endpoint: Endpoint = { url: target.url, recorder, signal: AbortSignal.timeout(Math.max(30_000, requestTimeoutMs * 4)), requestTimeoutMs };
  const profile: TargetProfile = {};
  if (generations.includes('v1')) profile.v1 = await probeV1(endpoint, target.tokenA);
  if (generations.includes('v2')) profile.v2 = await probeV2(endpoint, target.tokenA);
  const answered = evidence.some((exchange) => exchange.response !== undefined);
  if (!answered && evidence.length > 0) throw new TargetUnreachableError(`cannot reach ${target.url}: ${evidence[0]?.error ?? 'no answer'}`);
  return { profile, evidence };
}
