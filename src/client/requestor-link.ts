/**
 * One connection of the requestor client as its collaborators see it (the journaled call, the result reader): the
 * negotiated session and what was decided at connect time. {@link TasksClient} owns it; the collaborators read it
 * and never renegotiate, so every piece of the client agrees on one generation and one endpoint.
 */
import { TASKS_EXTENSION_ID } from '../protocol/constants.js';
import { taskGenerationOf } from '../protocol/manifest.js';
import { EndpointJournal } from './endpoint-journal.js';
import { ELICITATION_CAPABILITY, type InputHandler } from './input.js';
import type { TaskJournal } from './journal.js';
import { deadlineFetch } from './request-deadline.js';
import type { McpSession } from './session.js';
import type { ConnectTasksClientOptions } from './tasks-client-options.js';
import type { TaskGeneration } from './types.js';
import type { V1InputRouter } from './v1-input-router.js';
import type { ModernEndpoint } from './v2-http.js';

/** The `clientInfo` sent when the caller gives none. */
export const DEFAULT_CLIENT_INFO = { name: 'mcp-tasks-client', version: '0.1.0' };

/** How the client answers input: the serialized `onInput` and the router of 2025-11-25 questions. */
export interface ClientInput {
  handler: InputHandler;
  router: V1InputRouter;
}

/** The state one connected client shares with its collaborators; fixed at connect time. */
export interface RequestorLink {
  readonly session: McpSession;
  /** The endpoint, normalised (`new URL(url).href`). */
  readonly url: string;
  readonly protocolVersion: string;
  /** The task generation of this connection; `null` when it offers no tasks. */
  readonly generation: TaskGeneration | null;
  readonly taskCapabilities: { readonly cancel: boolean; readonly list: boolean };
  readonly journaled: EndpointJournal;
  readonly options: ConnectTasksClientOptions;
  /** Present when the client answers input (connected with `onInput`). */
  readonly input: ClientInput | undefined;
}

/** Where and as whom raw 2026-07-28 requests go, with this client's capabilities (the extension unless `declareTasks` is false). */
export function modernEndpointOf(link: RequestorLink, declareTasks = true): ModernEndpoint {
  const { options } = link;
  return {
    url: new URL(link.url),
    fetch: deadlineFetch(options.fetch ?? fetch),
    ...(options.token !== undefined ? { token: options.token } : {}),
    ...(options.headers ? { headers: options.headers } : {}),
    clientInfo: options.clientInfo ?? DEFAULT_CLIENT_INFO,
    capabilities: {
      ...(link.generation === 'v2' && declareTasks ? { extensions: { [TASKS_EXTENSION_ID]: {} } } : {}),
      ...(link.input ? { elicitation: ELICITATION_CAPABILITY } : {}),
    },
  };
}

/**
 * The link of a session just opened: its generation and task capabilities as the server declared them — v2 can
 * always cancel and never list; v1 only what `tasks.cancel` / `tasks.list` declare — and its journal view.
 */
export function openRequestorLink(
  session: McpSession,
  url: URL,
  journal: TaskJournal | undefined,
  options: ConnectTasksClientOptions,
  input: ClientInput | undefined,
): RequestorLink {
  const { protocolVersion, serverCapabilities: capabilities } = session;
  const v1Tasks = asObject(capabilities.tasks);
  const generation = taskGenerationOf(protocolVersion, capabilities);
  const taskCapabilities =
    generation === 'v2'
      ? { cancel: true, list: false }
      : {
          cancel: generation === 'v1' && asObject(v1Tasks?.cancel) !== undefined,
          list: generation === 'v1' && asObject(v1Tasks?.list) !== undefined,
        };
  const journaled = new EndpointJournal(journal, { url: url.href, protocolVersion, generation });
  return { session, url: url.href, protocolVersion, generation, taskCapabilities, journaled, options, input };
}

function asObject(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
