import { Server, type McpServerFactory, type ServerCapabilities, type ServerContext } from '@modelcontextprotocol/server';
import { methodNotFound } from '../core/errors.js';
import { TASKS_EXTENSION_ID, V1_PROTOCOL_VERSION } from '../protocol/constants.js';
import { callerOf, type Era } from './caller.js';
import type { HandlerDeps } from './deps.js';
import { guarded } from './guard.js';
import { registerV1TaskHandlers } from './tasks-v1.js';
import { registerV2TaskHandlers } from './tasks-v2.js';
import { toolListEntry } from './tools-list.js';
import { handleToolsCall } from './tools-call.js';
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
    private readonly era: Era,
    verifyRequestState: (state: string, context: ServerContext) => Promise<unknown>,
  ) {
    super(info, { capabilities, requestState: { verify: verifyRequestState } });
  }

  override getCapabilities(): ServerCapabilities {
    const capabilities = super.getCapabilities();
    if (this.era === 'legacy' && this.getNegotiatedProtocolVersion() !== V1_PROTOCOL_VERSION) {
      const { tasks: _legacyTasks, ...rest } = capabilities as ServerCapabilities & { tasks?: unknown };
      return rest;
    }
    return capabilities;
  }
}

/**
 * Capabilities per era: the Tasks Extension on 2026-07-28 (never the legacy `tasks` object there, SEP-2663 §3);
 * on 2025-11-25 `tasks` with `cancel`, `requests.tools.call`, and `list` only when requestors are authenticated (R51).
 */
function capabilitiesFor(era: Era, authEnabled: boolean): ServerCapabilities {
  if (era === 'modern') return { tools: {}, extensions: { [TASKS_EXTENSION_ID]: {} } } as ServerCapabilities;
  return { tools: {}, tasks: { ...(authEnabled ? { list: {} } : {}), cancel: {}, requests: { tools: { call: {} } } } } as ServerCapabilities;
}

/**
 * The SDK server factory: one instance per modern request, per legacy session, per stdio connection.
 * `tools/call` goes through the fallback handler (see `handleToolsCall`); the task methods are registered per era.
 */
export function createServerFactory(deps: HandlerDeps): McpServerFactory {
  return ({ era }) => {
    const server = new TasksSdkServer(deps.serverInfo, capabilitiesFor(era, deps.authEnabled), era, deps.requestStates.verify);
    const callerFor = (context: ServerContext) => callerOf(server, era, context);

    server.setRequestHandler('tools/list', (_request, context) =>
      guarded(deps.logger, 'tools/list', async () => {
        const caller = callerFor(context);
        return { tools: deps.runtime.listTools().map((tool) => toolListEntry(tool, caller)) } as never;
      }),
    );
    const notifier = era === 'legacy' ? new V1SessionNotifier(server, deps) : undefined;
    if (notifier) {
      deps.sessionNotifiers.set(server, notifier);
      server.onclose = () => notifier.close();
    }
    server.fallbackRequestHandler = (request, context) =>
      guarded(deps.logger, request.method, async () => {
        if (request.method !== 'tools/call') throw methodNotFound(request.method);
        return (await handleToolsCall(deps, callerFor(context), request, context, notifier && ((record) => notifier.trackCreated(record)))) as never;
      });
    if (era === 'legacy') registerV1TaskHandlers(server, deps, callerFor);
    else registerV2TaskHandlers(server, deps, callerFor);
    return server;
  };
}
