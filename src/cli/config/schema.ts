import { z } from 'zod';

import { MAX_TIMER_MS } from '../../core/limits.js';

/**
 * THE definition of mcp-tasks configuration: the file (`--config mcp-tasks.json`), the environment variables and
 * the flags of `serve` and `worker` all name these settings, and `mcp-tasks.schema.json` is generated from this
 * schema (`npm run config:schema`; a test keeps it current). Durations are milliseconds, sizes bytes.
 */

const ms = z.number().int().positive();
/**
 * A duration a timer waits for (a timeout, an interval, a runtime limit): Node's timers take at most 2^31 − 1 ms
 * (24.8 days) and fire after 1 ms past it, so a larger value would end every run at once. Retentions and TTLs are
 * compared with the clock, not waited for, and keep `ms`.
 */
const timerMs = ms.max(MAX_TIMER_MS);
const port = z.number().int().min(0).max(65535);

/** Limits and timings (`TasksServerLimits`); absent ones take the library defaults. */
export const LimitsConfigSchema = z
  .object({
    concurrency: z.number().int().positive().describe('tools running at once in this process (default 16)'),
    leaseMs: timerMs.describe('lease length of running and queued tasks (default 15000)'),
    defaultTtlMs: ms.nullable().describe('retention when none is asked for; null = unlimited (default 7200000)'),
    maxTtlMs: ms.nullable().describe('largest retention granted; null = unlimited (default 86400000)'),
    minTtlMs: ms.describe('smallest retention granted (default 1000)'),
    runtimeLimitMs: timerMs.describe('longest single run of a tool (default 3600000)'),
    pollIntervalMs: timerMs.describe('poll interval hint of a task aged up to 10 s; older tasks get 10 % of their age, up to 30 s (default 1000)'),
    maxAttempts: z.number().int().positive().describe('runs per task before attempts_exhausted (default 3)'),
    recoveryIntervalMs: timerMs.describe('interval of the lapsed-lease scan (default: leaseMs)'),
    claimIntervalMs: timerMs.describe('fallback claim interval when no event announced work (default 1000)'),
    sweepIntervalMs: timerMs.describe('interval of the TTL sweeper (default 1000)'),
    tailIntervalMs: timerMs.describe('interval of the cross-process event tail (default 250)'),
    statusFlushIntervalMs: timerMs.describe('window coalescing statusMessage writes (default 1000)'),
    listPageSize: z.number().int().min(1).max(100).describe('v1 tasks/list page size (default 50)'),
    maxRequestBodyBytes: z.number().int().positive().describe('largest HTTP request body; larger get HTTP 413 (default 4194304)'),
    sessionIdleMs: ms.describe('2025-era HTTP sessions idle longer are closed (default 1800000)'),
    maxSessions: z.number().int().positive().describe('most 2025-era HTTP sessions kept at once (default 1000)'),
    inputTimeoutMs: timerMs.describe('longest wait for an answer before input_timeout (default 3600000)'),
    inlineGraceMs: z
      .number()
      .int()
      .min(0)
      .describe('2026-07-28: answer a task-optional call inline when its task completes within this many ms; 0 = always a task (default 1000)'),
    structuredContentMaxBytes: z
      .number()
      .int()
      .positive()
      .describe('tool results whose structuredContent JSON is larger are logged and counted: clients give it to the model (default 32768)'),
    progressKeepAliveMs: timerMs.describe(
      'longest silence of an inline tools/call with a progressToken before a keep-alive notifications/progress (default 20000)',
    ),
    minResultRetentionMs: z.number().int().min(0).describe('a task that runs to the runtime limit must keep its result this long (default 600000)'),
    maxArgumentBytes: z.number().int().positive().describe('largest tools/call arguments in bytes of JSON; larger → -32602 (default 1048576)'),
    maxArgumentDepth: z.number().int().positive().describe('deepest nesting of tools/call arguments; deeper → -32602 (default 32)'),
    maxActiveTasksPerOwner: z
      .number()
      .int()
      .positive()
      .nullable()
      .describe('most working/input_required tasks per owner, counted in the store; more → -31001 active_tasks; null = unlimited (default null)'),
    maxCreatesPerMinute: z
      .number()
      .int()
      .positive()
      .nullable()
      .describe('most task creates per owner in any 60 s, counted in the store; more → -31001 create_rate; null = unlimited (default null)'),
    maxResultBytes: z
      .number()
      .int()
      .positive()
      .describe(
        'largest tool result stored inline, bytes of JSON; larger → bounded content + resource_link to mcp-tasks://tasks/{taskId}/result (default 4194304)',
      ),
    maxStoredResultBytes: z
      .number()
      .int()
      .positive()
      .describe('largest tool result kept at all, bytes of JSON; larger → the task fails with result_too_large (default 67108864)'),
    idempotencyWindowMs: ms.describe('how long a tools/call idempotency key holds, independent of the TTL (default 86400000: 24 h)'),
    auditRetentionMs: ms.describe('how long audit entries are kept, independent of task TTLs (default 7776000000: 90 days)'),
    abortGraceMs: timerMs.describe('how long an aborted tool may take to stop before its thread is terminated (default 5000)'),
  })
  .partial()
  .strict();

/** What a rollout was verified with; a mismatch at start-up refuses to start unless `--allow-unpinned`. */
export const PinsConfigSchema = z
  .object({
    protocolVersions: z
      .array(z.enum(['2025-11-25', '2026-07-28']))
      .min(1)
      .describe('protocol versions this server must serve'),
    sdk: z.record(z.string(), z.string()).describe('package name → exact installed version (e.g. {"@modelcontextprotocol/server": "2.4.0"})'),
    allowedTools: z.array(z.string()).describe('the exact set of tools the server may register'),
    maxTtlMs: ms.nullable().describe('limits.maxTtlMs must equal this'),
    concurrency: z.number().int().positive().describe('limits.concurrency must equal this'),
    retentionMs: ms.nullable().describe('limits.defaultTtlMs (retention of a task) must equal this'),
    owner: z.string().describe('team that owns this deployment (shown by config print and manifest)'),
    contact: z.string().describe('how to reach the owner (shown by config print and manifest)'),
  })
  .partial()
  .strict();

/** Task mode of one tool limited to a canary of owners (issue 15 item 7); the rest get the fallback. */
export const CanaryConfigSchema = z
  .object({
    percent: z.number().min(0).max(100).describe('share of owners in the canary (stable: sha256 of the owner key, first 32 bits mod 10000 < percent × 100)'),
    tenants: z.array(z.string().min(1)).describe('tenants always in the canary (the last part of the owner key issuer|subject|tenant)'),
    fallback: z.enum(['sync', 'reject']).describe('what callers outside the canary get (default: rollout.fallback)'),
  })
  .partial()
  .strict();

/** Kill switch and canary (issue 15 items 6–7). */
export const RolloutConfigSchema = z
  .object({
    fallback: z
      .enum(['sync', 'reject'])
      .describe('default fallback of a kill switch set without one: sync (inline, where the tool may run inline) or reject (-31003) (default reject)'),
    maxSyncMs: timerMs.describe('longest inline run of the sync fallback; past it the call fails with -31003 sync_timeout (default 30000)'),
    killSwitchRefreshMs: z
      .number()
      .int()
      .min(50)
      .max(1000)
      .describe('how often the stored kill switch is re-read; every instance sees a change within this (default 500)'),
    canary: z.record(z.string().min(1), CanaryConfigSchema).describe('tool name → its canary'),
  })
  .partial()
  .strict();

/** The configuration file and the effective configuration, one shape. */
export const ConfigSchema = z
  .object({
    $schema: z.string().optional().describe('path or URL of mcp-tasks.schema.json (editor support; ignored)'),
    dataDir: z.string().min(1).optional().describe('data directory: SQLite store, secret (default ./data)'),
    store: z.string().min(1).optional().describe('postgres://… URL or SQLite file path (default <dataDir>/tasks.db); a URL password is secret'),
    secret: z
      .string()
      .min(16, 'must be at least 16 bytes')
      .optional()
      .describe(
        'secret signing cursors and request states, ≥ 16 bytes (default: <dataDir>/secret on SQLite; on PostgreSQL one generated and kept in the database); secret',
      ),
    tools: z.array(z.string()).optional().describe('tool modules to load'),
    builtins: z.boolean().optional().describe('register the built-in tools (default true)'),
    upstreams: z
      .array(z.string().min(1))
      .optional()
      .describe(
        'MCP servers whose tools are listed as ours, each call a task forwarded to them: <name>=stdio:<command …> or <name>=http(s)://…/mcp; tools are listed as <name>_<tool> (default none)',
      ),
    upstreamStartTimeoutMs: timerMs
      .optional()
      .describe(
        "longest wait for an upstream's initialize and tools/list answers, at start and at each reconnect; an upstream past it is a start-up error and its process is ended (default 30000)",
      ),
    upstreamsForwardIdentity: z
      .array(z.string().min(1))
      .optional()
      .describe(
        "names of HTTP upstreams that get the caller's identity (issuer, subject and tenant of the owner key) as MCP-Tasks-Caller-Issuer / -Subject / -Tenant headers on each call (default none); the upstream must be reachable by this server only, since anyone reaching it could send such headers",
      ),
    upstreamsAllowDataDir: z
      .array(z.string().min(1))
      .optional()
      .describe(
        'names of stdio upstreams that may be given the data directory, the store, the token file or a directory holding them as an argument (default none: such an upstream is refused at start, since it could read the secret and the tasks)',
      ),
    upstreamTools: z
      .record(
        z.string().min(1),
        z
          .object({
            execution: z.enum(['sync', 'task-optional', 'task-required']).describe('task mode of the upstream tool (default task-optional)'),
            idempotent: z
              .boolean()
              .describe(
                'a call interrupted by a crash of the process that ran it is sent again (up to limits.maxAttempts runs in all); else the task fails interrupted (default false)',
              ),
            runtimeLimitMs: timerMs.describe('longest run of a call of the upstream tool, instead of limits.runtimeLimitMs (default: that limit)'),
            defaultTtlMs: ms.describe(
              "retention of the upstream tool's tasks when the requestor asks for none, within limits.minTtlMs and limits.maxTtlMs (default: limits.defaultTtlMs)",
            ),
          })
          .partial()
          .strict(),
      )
      .optional()
      .describe('policy of upstream tools by listed name, <name>_* prefix or * (the exact name wins, then the longest prefix)'),
    fixtures: z.enum(['conformance', 'verify']).optional().describe('also register fixture tools'),
    roots: z.array(z.string()).optional().describe('directories tools may read (default: current directory and /var/log)'),
    writableRoots: z.array(z.string()).optional().describe('directories tools may delete in (default none)'),
    checkTargets: z
      .array(z.string())
      .optional()
      .describe('hosts check_infrastructure may reach: name, *.domain, IP or CIDR, optional :port (default none: files only)'),
    taskFallbackTools: z
      .boolean()
      .optional()
      .describe(
        'serve: clients without task support (2025-era without a tasks capability, 2026-07-28 without the Tasks Extension) get task ids and get_task_status / get_task_result / cancel_task (default false)',
      ),
    dashboard: z.boolean().optional().describe('serve: the web dashboard at /dashboard on the same port, behind the same authentication (default false)'),
    dashboardOptions: z
      .object({
        clientId: z
          .string()
          .min(1)
          .describe(
            'dashboard, auth jwt: client id of the dashboard at the issuer (a public client); turns on sign-in with the authorization-code flow and PKCE',
          ),
        scopes: z
          .string()
          .min(1)
          .describe('dashboard, auth jwt: scopes the sign-in asks for, space separated (default "tasks:read tasks:cancel tasks:answer"; openid is added)'),
        redirectUri: z
          .string()
          .url()
          .describe('dashboard, auth jwt: redirect URI registered for the client (default <origin>/dashboard/callback of the request)'),
        secureCookie: z.boolean().describe('dashboard: mark the session cookie Secure (behind a TLS-terminating proxy; default false)'),
        sessionTtlMs: ms.describe('dashboard: session lifetime in ms (default 28800000; in JWT mode a session also ends when its access token expires)'),
      })
      .partial()
      .strict()
      .optional(),
    auth: z.string().optional().describe('authentication: tokens:<file> or jwt'),
    jwt: z
      .object({
        issuer: z.string().min(1).describe('auth jwt: issuer identifier of the authorization server'),
        audience: z.string().min(1).describe("auth jwt: this server's public MCP URL, the resource tokens must be issued for (RFC 8707)"),
        jwksUrl: z.string().min(1).describe("auth jwt: the issuer's JSON Web Key Set (default: jwks_uri of its metadata)"),
        tenantClaim: z.string().min(1).describe('auth jwt: claim naming the tenant (default tenant)'),
        scopeClaim: z.string().min(1).describe('auth jwt: claim holding the scopes (default scope, else scp)'),
        jwksMaxAgeMs: ms.describe('auth jwt: longest a fetched key set is trusted (default 600000)'),
        jwksCooldownMs: ms.describe('auth jwt: shortest time between key-set fetches for unknown key ids (default 30000)'),
      })
      .partial()
      .strict()
      .optional(),
    toolScopes: z.array(z.string()).optional().describe('scope a tools/call of a tool needs, as tool=scope'),
    encryptionKey: z
      .string()
      .min(1)
      .optional()
      .describe('at-rest encryption key of arguments, input requests and answers, and journaled steps (not results: see docs/security); secret'),
    encryptionKeysOld: z.array(z.string().min(1)).optional().describe('older keys still readable during a rotation; secret'),
    instanceId: z
      .string()
      .min(1)
      .optional()
      .describe('stable id of this process in the registry and its leases (default <host>:serve:<port>, <host>:worker[:<health port>])'),
    heartbeatMs: z.number().int().positive().optional().describe('process registry heartbeat; gone after three missed (default 1000)'),
    workerAbsentMs: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe('serve --no-worker: /readyz is not ready once no worker process of the store has been live for this long (default 30000; 0: never)'),
    executor: z.enum(['isolated', 'in-process']).optional().describe('how tools run: a worker thread per run, or on the event loop (default isolated)'),
    minThreads: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('isolated executor: threads that load the tools at start and stay loaded, the warm pool (default 1, at most concurrency + 4)'),
    threadHeapMb: z
      .number()
      .int()
      .min(16)
      .optional()
      .describe(
        'isolated executor: JavaScript heap limit of each tool thread in MB (Buffers and ArrayBuffers are outside it); a tool that exceeds it fails its run, never the process (default 1024)',
      ),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional().describe('pino log level (default info)'),
    drainMs: z.number().int().min(0).optional().describe('on SIGTERM, how long runs and requests in flight may finish (default 30000)'),
    limits: LimitsConfigSchema.optional(),
    http: z
      .object({
        port: port.describe('HTTP port of serve (default 3100)'),
        host: z.string().min(1).describe('bind address of serve (default 127.0.0.1)'),
        allowedHosts: z.array(z.string()).describe('Host/Origin allow-list for a non-loopback bind ("*" turns it off)'),
        allowRemoteUnauthenticated: z.boolean().describe('allow a non-loopback bind without auth (default false)'),
      })
      .partial()
      .strict()
      .optional(),
    worker: z
      .object({
        healthPort: port.describe('worker: serve /healthz, /readyz and /metrics on this port (default none)'),
        healthHost: z.string().min(1).describe('bind address of healthPort (default 127.0.0.1)'),
      })
      .partial()
      .strict()
      .optional(),
    tracing: z
      .object({
        otlpEndpoint: z.url().describe('OTLP/HTTP base URL: traces are exported (JSON) to <url>/v1/traces; unset = no SDK registered (default none)'),
        serviceName: z.string().min(1).describe('service.name resource attribute of exported spans (default mcp-tasks)'),
      })
      .partial()
      .strict()
      .optional(),
    shadow: z
      .object({
        tools: z
          .array(z.string().min(1))
          .describe(
            'shadow mode: tools whose tasks are compared with the job API their shadow adapter observes ("*" = every tool with an adapter) (default none)',
          ),
        intervalMs: z.number().int().min(10).describe("shadow mode: how often a running task's job is polled (default 1000)"),
        settleChecks: z.number().int().min(0).max(100).describe('shadow mode: polls after the task ended while the job still says working (default 3)'),
      })
      .partial()
      .strict()
      .optional(),
    pins: PinsConfigSchema.optional(),
    rollout: RolloutConfigSchema.optional(),
  })
  .strict();

/** A configuration file's content (and the merged effective configuration). */
export type McpTasksConfig = z.infer<typeof ConfigSchema>;

/** The JSON Schema of the configuration file, generated from {@link ConfigSchema} (draft 2020-12). */
export function configJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(ConfigSchema, { target: 'draft-2020-12' }),
    $id: 'https://mcp-tasks.dev/schema/mcp-tasks.schema.json',
    title: 'mcp-tasks configuration',
  } as Record<string, unknown>;
}
