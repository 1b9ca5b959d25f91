/**
 * The tool map: which of the server's tools plays which role in the checks, what the server is configured with,
 * and the load thresholds. Defaults name the official conformance fixture tools (`slow_compute`, `failing_job`,
 * `protocol_error_job`, `confirm_delete`, `multi_input`, `greet`) plus the side-effect counter of
 * `mcp-tasks serve --fixtures verify`, so `verify` runs with no map against servers exposing those.
 *
 * Arguments may hold placeholders: a string that is exactly `"$seconds"` or `"$ms"` becomes the number the check
 * asks for (how long the tool should work); `$text` (text the check plants, e.g. secrets and control characters)
 * and `$key` (a key unique to the check, for side-effect counters) are replaced inside any string.
 */
import { readFileSync } from 'node:fs';

import { z } from 'zod';

/** A tool and the arguments to call it with. */
export interface ToolRef {
  tool: string;
  arguments: Record<string, unknown>;
}

/** A tool that asks for input, and the form content verify answers with (`action: "accept"`). */
export interface InputToolRef extends ToolRef {
  answer: Record<string, unknown>;
}

/** Roles a tool can play; `null` = the server has no such tool (checks needing it are skipped, saying so). */
export interface ToolRoles {
  /** Works for the requested time and can be cancelled; task-optional or task-required. */
  slow: ToolRef | null;
  /** Ends with a tool result carrying `isError: true`. */
  toolError: ToolRef | null;
  /** Ends with a JSON-RPC error (the tool throws). */
  throws: ToolRef | null;
  /** Asks one question (elicitation) and then completes. */
  asksInput: InputToolRef | null;
  /** Asks two questions at once. */
  asksTwoInputs: InputToolRef | null;
  /** Never a task (v1 `taskSupport` forbidden or absent). */
  sync: ToolRef | null;
  /** Only a task (v1 `taskSupport: "required"`; v2 `-32021` for a client without the extension). */
  required: ToolRef | null;
  /** Performs one counted side effect per run (`tool`), and reads the count (`readTool`, a number in its result). */
  sideEffect: { tool: ToolRef; readTool: ToolRef } | null;
}

/** What the server is configured with, for checks that cannot find out on the wire. */
export interface ServerFacts {
  /** The retention the server grants 2026-07-28 tasks (ms), when it is short enough to wait for. */
  ttlMs?: number;
  /** Tools it runs at once; the load gate then checks that it is honoured. */
  concurrency?: number;
  /** A Prometheus endpoint; default: `<origin>/metrics` is tried. */
  metricsUrl?: string;
}

/** Numbers the load gate and a few checks use; each can be set in the map or with `--threshold name=value`. */
export interface Thresholds {
  /** Concurrent tasks of the concurrency check. */
  loadTasks: number;
  /** How long each of them works (ms). */
  loadTaskMs: number;
  /** Clients polling faster than `pollInterval` in the amplification check. */
  pollClients: number;
  /** How long the amplification check measures (ms). */
  pollWindowMs: number;
  /** Largest allowed slowdown of an honouring client's polls (p50 under amplification ÷ p50 alone). */
  maxPollSlowdown: number;
  /** Slow tasks kept outstanding in the backpressure check. */
  backpressureTasks: number;
  /** Longest a create may take under backpressure (ms) before it counts as a hang. */
  maxCreateMs: number;
  /** Longest verify waits for a TTL to pass (ms); longer TTLs skip the expiry checks. */
  maxTtlWaitMs: number;
  /** Task ids sampled for the entropy check. */
  idSample: number;
  /** Least estimated random bits per task id (C-SEC-01 asks 128). */
  minIdBits: number;
  /** Longest statusMessage accepted after planting oversized text (characters). */
  maxStatusChars: number;
  /** Longest the whole load gate may take (ms); its checks stop early and report what they measured. */
  loadBudgetMs: number;
}

/** A resolved tool map. */
export interface ToolMap {
  roles: ToolRoles;
  server: ServerFacts;
  thresholds: Thresholds;
}

/** Defaults of {@link Thresholds}. */
export const DEFAULT_THRESHOLDS: Readonly<Thresholds> = Object.freeze({
  loadTasks: 8,
  loadTaskMs: 1500,
  pollClients: 8,
  pollWindowMs: 3000,
  maxPollSlowdown: 5,
  backpressureTasks: 24,
  maxCreateMs: 2000,
  maxTtlWaitMs: 15_000,
  idSample: 24,
  minIdBits: 128,
  maxStatusChars: 1024,
  loadBudgetMs: 60_000,
} satisfies Thresholds);

/** The default roles: the official conformance fixture names, plus `serve --fixtures verify`'s counter. */
export const DEFAULT_ROLES: Readonly<ToolRoles> = Object.freeze({
  slow: { tool: 'slow_compute', arguments: { seconds: '$seconds', label: '$text' } },
  toolError: { tool: 'failing_job', arguments: {} },
  throws: { tool: 'protocol_error_job', arguments: {} },
  asksInput: { tool: 'confirm_delete', arguments: { filename: 'verify-$key.txt' }, answer: { confirm: true } },
  asksTwoInputs: { tool: 'multi_input', arguments: {}, answer: { confirm: true } },
  sync: { tool: 'greet', arguments: { name: 'verify' } },
  required: { tool: 'failing_job', arguments: {} },
  sideEffect: {
    tool: { tool: 'side_effect_job', arguments: { key: '$key', seconds: '$seconds' } },
    readTool: { tool: 'read_side_effects', arguments: { key: '$key' } },
  },
} satisfies ToolRoles);

const ToolRefSchema = z.union([
  z
    .string()
    .min(1)
    .transform((tool) => ({ tool, arguments: {} })),
  z.object({ tool: z.string().min(1), arguments: z.record(z.string(), z.unknown()).default({}) }).strict(),
]);
const InputToolRefSchema = z
  .object({ tool: z.string().min(1), arguments: z.record(z.string(), z.unknown()).default({}), answer: z.record(z.string(), z.unknown()).default({}) })
  .strict();
const positive = z.number().int().positive();

const ToolMapFileSchema = z
  .object({
    slow: ToolRefSchema.nullable(),
    toolError: ToolRefSchema.nullable(),
    throws: ToolRefSchema.nullable(),
    asksInput: InputToolRefSchema.nullable(),
    asksTwoInputs: InputToolRefSchema.nullable(),
    sync: ToolRefSchema.nullable(),
    required: ToolRefSchema.nullable(),
    sideEffect: z.object({ tool: ToolRefSchema, readTool: ToolRefSchema }).strict().nullable(),
    server: z.object({ ttlMs: positive, concurrency: positive, metricsUrl: z.string().url() }).partial().strict(),
    thresholds: z
      .object(Object.fromEntries(Object.keys(DEFAULT_THRESHOLDS).map((key) => [key, z.number().positive()])) as Record<keyof Thresholds, z.ZodNumber>)
      .partial()
      .strict(),
  })
  .partial()
  .strict();

/** A tool map as written in a `--tools-map` file (every field optional; roles may be `null`). */
export type ToolMapFile = z.input<typeof ToolMapFileSchema>;

/** A tool map file (or the threshold flags) is invalid. */
export class ToolMapError extends Error {
  override readonly name = 'ToolMapError';
}

/** Merge a map (file contents, already parsed) over the defaults. @throws ToolMapError naming every problem. */
export function resolveToolMap(input: unknown = {}, thresholdOverrides: Partial<Thresholds> = {}): ToolMap {
  const parsed = ToolMapFileSchema.safeParse(input);
  if (!parsed.success) throw new ToolMapError(`invalid tool map: ${z.prettifyError(parsed.error)}`);
  const file = parsed.data;
  const roles = { ...DEFAULT_ROLES } as ToolRoles;
  for (const role of Object.keys(DEFAULT_ROLES) as Array<keyof ToolRoles>) {
    if (role in file) (roles as unknown as Record<string, unknown>)[role] = file[role] ?? null;
  }
  return { roles, server: file.server ?? {}, thresholds: { ...DEFAULT_THRESHOLDS, ...file.thresholds, ...thresholdOverrides } };
}

/** Read and resolve a `--tools-map` JSON file. @throws ToolMapError when unreadable or invalid. */
export function loadToolMap(path: string | undefined, thresholdOverrides: Partial<Thresholds> = {}): ToolMap {
  if (path === undefined) return resolveToolMap({}, thresholdOverrides);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ToolMapError(`cannot read tool map ${path}: ${(error as Error).message}`);
  }
  return resolveToolMap(raw, thresholdOverrides);
}

/** Parse `name=value` threshold flags. @throws ToolMapError for an unknown name or a non-positive value. */
export function parseThresholds(pairs: readonly string[]): Partial<Thresholds> {
  const result: Partial<Thresholds> = {};
  for (const pair of pairs) {
    const [name, value] = pair.split('=', 2);
    if (!name || !(name in DEFAULT_THRESHOLDS))
      throw new ToolMapError(`--threshold ${pair}: unknown name; one of ${Object.keys(DEFAULT_THRESHOLDS).join(', ')}`);
    const number = Number(value);
    if (!Number.isFinite(number) || number <= 0) throw new ToolMapError(`--threshold ${pair}: expected a positive number`);
    result[name as keyof Thresholds] = number;
  }
  return result;
}

/** Values for the placeholders of a call. */
export interface Placeholders {
  ms?: number;
  text?: string;
  key?: string;
}

function substitute(value: unknown, values: Placeholders): unknown {
  if (typeof value === 'string') {
    if (value === '$seconds') return Math.max(0, (values.ms ?? 1000) / 1000);
    if (value === '$ms') return Math.max(0, Math.round(values.ms ?? 1000));
    return value.replaceAll('$text', values.text ?? 'verify').replaceAll('$key', values.key ?? 'verify');
  }
  if (Array.isArray(value)) return value.map((item) => substitute(item, values));
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substitute(item, values)]));
  return value;
}

/** The arguments of a tool call with its placeholders filled in. */
export function argumentsFor(ref: ToolRef, values: Placeholders = {}): Record<string, unknown> {
  return substitute(ref.arguments, values) as Record<string, unknown>;
}

/** Whether a tool's arguments carry the `$text` placeholder (where planted text can go). */
export function takesText(ref: ToolRef): boolean {
  return JSON.stringify(ref.arguments).includes('$text');
}

/** The count a side-effect read tool returned: `structuredContent.count`, else the first integer of its text. */
export function readCount(result: Record<string, unknown> | undefined): number | undefined {
  const structured = result?.structuredContent as { count?: unknown } | undefined;
  if (typeof structured?.count === 'number') return structured.count;
  const content = Array.isArray(result?.content) ? (result.content as Array<{ type?: string; text?: unknown }>) : [];
  const text = content.find((block) => block.type === 'text' && typeof block.text === 'string')?.text as string | undefined;
  const match = text ? /-?\d+/.exec(text) : null;
  return match ? Number(match[0]) : undefined;
}
