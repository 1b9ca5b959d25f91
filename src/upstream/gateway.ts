import type { Executor, UpstreamStatus } from '../core/executor.js';
import type { Logger } from '../core/logger.js';
import type { AnyToolDefinition } from '../core/tool.js';
import { UpstreamConnection, type UpstreamTool } from './connection.js';
import { GatewayExecutor } from './gateway-executor.js';
import { checkUpstreamRules, resolveUpstreamPolicy, type UpstreamToolRules } from './policy.js';
import { describeUpstream, listedToolName, type UpstreamSpec } from './spec.js';
import { signalProcessGroup } from './stdio-process-group.js';
import { upstreamToolDefinition } from './tools.js';

/** The upstreams of one process, connected: their tools as ours, their states, and the executor that runs them. */
export interface UpstreamGateway {
  /** Every upstream tool under its listed name, in the order of the specs and of each upstream's list. */
  readonly tools: AnyToolDefinition[];
  /** How each upstream stands now. */
  statuses(): UpstreamStatus[];
  /** `base` with the upstream tools routed to this process's connections (see `GatewayExecutor`). */
  executor(base: Executor): Executor;
  /** Close every connection (stdio children end). */
  close(): Promise<void>;
}

/** What {@link startUpstreams} needs besides the specs. */
export interface StartUpstreamsOptions {
  rules: UpstreamToolRules;
  logger: Logger;
  clientVersion: string;
  /** `limits.maxStoredResultBytes`: a stdio upstream's answers are read up to it (plus the JSON-RPC envelope). */
  maxResultBytes: number;
  /** Longest wait for each upstream's first `initialize` and `tools/list` (ms). */
  timeoutMs: number;
  /** Names of HTTP upstreams that get the caller's identity with each call (see `caller-identity.ts`). */
  forwardIdentity?: readonly string[];
}

/**
 * Connect to every upstream at once and list their tools under `<name>_<tool>` with the policy the rules give each.
 * A tool whose listed name would not be a valid MCP tool name is left out with a warning.
 * @throws Error naming the upstream that could not be started (every connection made is closed again), or a
 *   rule of `upstreamTools` that names no upstream tool.
 */
export async function startUpstreams(specs: readonly UpstreamSpec[], options: StartUpstreamsOptions): Promise<UpstreamGateway> {
  const connections = specs.map(
    (spec) =>
      new UpstreamConnection({
        spec,
        logger: options.logger,
        clientVersion: options.clientVersion,
        maxResultBytes: options.maxResultBytes,
        startTimeoutMs: options.timeoutMs,
        forwardIdentity: options.forwardIdentity?.includes(spec.name) === true,
      }),
  );
  const closeAll = (): Promise<unknown> => Promise.all(connections.map((connection) => connection.close()));
  const started = await Promise.allSettled(connections.map((connection) => connection.start()));
  const failed = started.flatMap((outcome, index) =>
    outcome.status === 'rejected' ? [`${describeUpstream(specs[index] as UpstreamSpec)}: ${(outcome.reason as Error).message}`] : [],
  );
  if (failed.length > 0) {
    await closeAll();
    throw new Error(`cannot start upstream ${failed.join('; ')}`);
  }
  const tools: AnyToolDefinition[] = [];
  /** How many tools of each upstream are listed here (those left out are not counted). */
  const listedCount = new Map<string, number>();
  for (const connection of connections) {
    for (const tool of connection.tools()) {
      const name = listedToolName(connection.name, tool.name);
      const leftOut = name === undefined ? 'its name is not a valid MCP tool name with the prefix' : taskRequiredUpstream(tool);
      if (name === undefined || leftOut !== undefined) {
        options.logger.warn({ upstream: connection.name, tool: tool.name }, `upstream tool left out: ${leftOut}`);
        continue;
      }
      tools.push(upstreamToolDefinition(connection, tool, name, resolveUpstreamPolicy(name, options.rules)));
      listedCount.set(connection.name, (listedCount.get(connection.name) ?? 0) + 1);
    }
  }
  try {
    checkUpstreamRules(
      options.rules,
      tools.map((tool) => tool.name),
    );
  } catch (error) {
    await closeAll();
    throw error;
  }
  const statuses = (): UpstreamStatus[] => connections.map((connection) => ({ ...connection.status(), tools: listedCount.get(connection.name) ?? 0 }));
  // Whatever way this process exits (a start-up error after this point, process.exit), its stdio children go too,
  // with what they started: each leads a process group (see stdio-process-group.ts).
  const killChildren = (): void => {
    for (const connection of connections) {
      const pid = connection.childPid();
      if (pid !== undefined) signalProcessGroup(pid, 'SIGTERM');
    }
  };
  process.once('exit', killChildren);
  return {
    tools,
    statuses,
    executor: (base) => new GatewayExecutor(base, tools, statuses),
    close: async () => {
      process.off('exit', killChildren);
      await closeAll();
    },
  };
}

/**
 * Why `tool` is left out when the upstream requires task augmentation for it (`execution.taskSupport: "required"`,
 * 2025-11-25): the gateway forwards plain `tools/call` requests, which such a tool refuses (`-32601`) every time, and
 * does not yet create and poll upstream tasks. Listing it would offer a tool that cannot succeed.
 */
function taskRequiredUpstream(tool: UpstreamTool): string | undefined {
  return tool.execution?.taskSupport === 'required'
    ? 'the upstream requires task augmentation for it (execution.taskSupport "required"), which the gateway does not forward yet'
    : undefined;
}
