import { type McpServerFactory, Server, type ServerCapabilities, type ServerContext } from '@modelcontextprotocol/server';

import { methodNotFound } from '../core/errors.js';
import { IDEMPOTENCY_CAPABILITY_ID, TASKS_EXTENSION_ID, V1_PROTOCOL_VERSION } from '../protocol/constants.js';
import type { Negotiation, TaskCaller } from '../service/caller.js';
import type { HandlerDeps } from './deps.js';
import { guarded } from './guard.js';
import { callerOf, negotiationOf } from './request-caller.js';
import { registerResultResourceHandlers } from './result-read-handler.js';
import { registerV1TaskHandlers } from './tasks-v1.js';
import { registerV2TaskHandlers } from './tasks-v2.js';
import { handleToolsCall } from './tools-call.js';
import { toolListEntry } from './tools-list.js';
import { V1SessionNotifier } from './v1-notifications.js';

/**
 * An SDK `Server` that advertises the legacy `tasks` capability only to sessions that negotiated 2025-11-25:
 * older sessions see no `tasks` (their revision has none). `_oninitialize` sets the negotiated version before it
 * reads the capabilities, so overriding `getCapabilities` is enough.
 */
class TasksSdkServer extends Server {
  constructor(
    info: { name: string; version: string },
    capabilities: ServerCapabilities,
    private readonly negotiation: Negotiation,
    verifyRequestState: (state: string, context: ServerContext) => Promise<unknown>,
  ) {
    super(info, { capabilities, requestState: { verify: verifyRequestState } });
  }

  override getCapabilities(): ServerCapabilities {
    const capabilities = super.getCapabilities();
    if (this.negotiation === 'per-session' && this.getNegotiatedProtocolVersion() !== V1_PROTOCOL_VERSION) {
      const { tasks: _legacyTasks, ...rest } = capabilities as ServerCapabilities & { tasks?: unknown };
      return rest;
    }
    return capabilities;
  }
}

/**
 * Capabilities per negotiation: the Tasks Extension on 2026-07-28 (never the legacy `tasks` object there, SEP-2663
 * §3); in 2025 sessions `tasks` with `cancel`, `requests.tools.call`, and `list` only when requestors are
 * authenticated (R51).
 */
function capabilitiesFor(negotiation: Negotiation, authEnabled: boolean): ServerCapabilities {
  // Idempotency keys on tools/call are honoured on both generations (issue 12): declared as an extension on
  // 2026-07-28 and under `experimental` in 2025 sessions, where a requestor that does not know it ignores it.
  // `resources`: large task results are read back with resources/read (issue 10 §2); nothing is listed.
  if (negotiation === 'per-request')
    return { tools: {}, resources: {}, extensions: { [TASKS_EXTENSION_ID]: {}, [IDEMPOTENCY_CAPABILITY_ID]: {} } } as ServerCapabilities;
  return {
    tools: {},
    resources: {},
    experimental: { [IDEMPOTENCY_CAPABILITY_ID]: {} },
    tasks: { ...(authEnabled ? { list: {} } : {}), cancel: {}, requests: { tools: { call: {} } } },
  } as ServerCapabilities;
}

/**
 * The SDK server factory: one instance per 2026-07-28 request, per v1-generation session, per stdio connection.
 * `tools/call` goes through the fallback handler (see `handleToolsCall`); the task methods are registered per
 * negotiation. The SDK's `era` is read here and nowhere else.
 */
export function createServerFactory(deps: HandlerDeps): McpServerFactory {
  return ({ era }) => {
    const negotiation = negotiationOf(era);
    const server = new TasksSdkServer(deps.serverInfo, capabilitiesFor(negotiation, deps.authEnabled), negotiation, deps.requestStates.verify);
    const callerFor = (context: ServerContext) => callerOf(server, negotiation, context);

    server.setRequestHandler('tools/list', (_request, context) =>
      guarded(deps.logger, 'tools/list', async () => {
        const caller = callerFor(context);
        return { tools: (await deps.service.calls.listTools(caller)).map((tool) => toolListEntry(tool, caller)) } as never;
      }),
    );
    registerResultResourceHandlers(server, deps, negotiation, callerFor);
    const notifier = negotiation === 'per-session' ? new V1SessionNotifier(server, deps) : undefined;
    if (notifier) {
      deps.sessionNotifiers.set(server, notifier);
      server.onclose = () => notifier.close();
    }
    server.fallbackRequestHandler = (request, context) =>
      guarded(deps.logger, request.method, async () => {
        if (request.method !== 'tools/call') throw methodNotFound(request.method);
        const caller = callerFor(context);
        return (await handleToolsCall(deps, caller, request, context, notifier && ((record) => notifier.trackCreated(caller as TaskCaller, record)))) as never;
      });
    if (negotiation === 'per-session') registerV1TaskHandlers(server, deps, callerFor);
    else registerV2TaskHandlers(server, deps, callerFor);
    return server;
  };
}
