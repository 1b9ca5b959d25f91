/**
 * What a check runs with: the target and its probed profile, the tool map, its own evidence recorder, sessions and
 * task wires for each principal, and a clean-up list (tasks it created are cancelled, sessions closed, whatever the
 * outcome). One context per check, so checks cannot leak state into each other.
 */
import { randomBytes } from 'node:crypto';

import type { Generation, Need } from './check.js';
import { describe, expectResult, fail, skip } from './expect.js';
import { argumentsFor, type Placeholders, readCount, type Thresholds, type ToolMap, type ToolRef, type ToolRoles } from './tool-map.js';
import type { Exchange, Recorder, WireAnswer } from './wire/exchange.js';
import { type Endpoint, V1Session, type V1SessionOptions } from './wire/requests.js';
import { type CallOptions, type TaskState, type TaskWire, TERMINAL_STATUSES, V1TaskWire, V2TaskWire } from './wire/tasks.js';

/** Who sends a request: principal A (`--token-a`), principal B (`--token-b`) or nobody (no token). */
export type Principal = 'a' | 'b' | 'none';

/** What `verify` was pointed at. */
export interface Target {
  url: string;
  tokenA?: string;
  tokenB?: string;
}

/** A tool as the server lists it. */
export interface ToolInfo {
  name: string;
  /** v1 `execution.taskSupport` (absent = forbidden, R8). */
  taskSupport?: string;
}

/** What the probe learnt about one generation. */
export type GenerationProfile =
  | { available: true; protocolVersion: string; capabilities: Record<string, unknown>; tools: ReadonlyMap<string, ToolInfo> }
  | { available: false; reason: string };

/** What the probe learnt about the target, per generation. */
export type TargetProfile = Partial<Record<Generation, GenerationProfile>>;

/** Roles whose tool must be able to run as a task. */
const TASK_ROLES: ReadonlySet<keyof ToolRoles> = new Set(['slow', 'toolError', 'throws', 'asksInput', 'asksTwoInputs', 'required']);

/** Longest verify waits between two polls (ms), whatever the server's hint: runs stay bounded. */
const MAX_POLL_WAIT_MS = 2000;
const MIN_POLL_WAIT_MS = 50;

/** The context of one check run. */
export class CheckContext {
  readonly evidence: Exchange[] = [];
  readonly warnings: string[] = [];
  readonly measurements: Record<string, number | string> = {};
  /** Unique per check: side-effect counter keys, planted text markers. */
  readonly key = randomBytes(6).toString('hex');
  private readonly started = Date.now();
  private readonly sessions: V1Session[] = [];
  private readonly created: Array<{ wire: TaskWire; taskId: string; status: string }> = [];
  /** createdAt + ttl of the tasks this check created (epoch ms). */
  private readonly expiries = new Map<string, number>();
  private readonly cleanups: Array<() => Promise<void>> = [];
  /** Every endpoint handed out, so clean-up can give them a live signal after the check's was aborted. */
  private readonly endpoints: Endpoint[] = [];
  readonly endpoint: Endpoint;
  readonly recorder: Recorder;

  constructor(
    readonly generation: Generation,
    readonly target: Target,
    readonly profile: TargetProfile,
    readonly map: ToolMap,
    readonly signal: AbortSignal,
    requestTimeoutMs: number,
  ) {
    this.recorder = {
      elapsed: () => Date.now() - this.started,
      record: (exchange) => void this.evidence.push(exchange),
      tokenLabel: (token) => (token === target.tokenA ? 'token-a' : token === target.tokenB ? 'token-b' : 'other-token'),
    };
    this.endpoint = { url: target.url, recorder: this.recorder, signal, requestTimeoutMs };
    this.endpoints.push(this.endpoint);
  }

  get thresholds(): Thresholds {
    return this.map.thresholds;
  }

  /** The probed profile of this check's generation (the runner only runs checks whose generation is served). */
  get served(): Extract<GenerationProfile, { available: true }> {
    const profile = this.profile[this.generation];
    if (!profile?.available) skip(profile?.reason ?? `${this.generation} was not probed`);
    return profile;
  }

  /** The bearer token of a principal (`undefined`: send none). */
  token(who: Principal): string | undefined {
    if (who === 'none') return undefined;
    return who === 'a' ? this.target.tokenA : this.target.tokenB;
  }

  /** An endpoint on another URL (the fault proxy's) with this check's recorder and signal. */
  endpointAt(url: string): Endpoint {
    const endpoint = { ...this.endpoint, url };
    this.endpoints.push(endpoint);
    return endpoint;
  }

  /** Record a warning: the check still passes, with status `warning`. */
  warn(message: string): void {
    if (!this.warnings.includes(message)) this.warnings.push(message);
  }

  /** Record a measured figure for the report. */
  measure(name: string, value: number | string): void {
    this.measurements[name] = value;
  }

  /** Run `fn` when the check ends (after task clean-up, before sessions close). */
  onCleanup(fn: () => Promise<void>): void {
    this.cleanups.push(fn);
  }

  /** Wait `ms`, or until the check is aborted. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.signal.aborted) return reject(this.signal.reason);
      const timer = setTimeout(() => (this.signal.removeEventListener('abort', onAbort), resolve()), ms);
      const onAbort = (): void => (clearTimeout(timer), reject(this.signal.reason));
      this.signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Skip unless every need is met; the reason says how to meet it. */
  require(needs: readonly Need[]): void {
    for (const need of needs) {
      if (need === 'tokenB') {
        if (!this.target.tokenB) skip('needs a second principal: pass --token-b (a token of another user; with --token-a for the first)');
        if (!this.target.tokenA) skip('needs two principals: pass --token-a as well as --token-b');
      } else if (need === 'list') {
        if (this.generation === 'v1' && this.served.capabilities.tasks && !(this.served.capabilities.tasks as Record<string, unknown>).list) {
          skip('the server does not advertise tasks.list (R4; R51 forbids it without a requestor identity — pass --token-a to verify listing)');
        }
      } else if (need === 'cancel') {
        if (this.generation === 'v1' && !(this.served.capabilities.tasks as Record<string, unknown>).cancel)
          skip('the server does not advertise tasks.cancel (R4): tasks cannot be cancelled');
      } else if (need === 'http') {
        if (!this.target.url.startsWith('http://'))
          skip('the fault proxy forwards to http: URLs only; point --url at the plain-HTTP endpoint (e.g. behind the TLS terminator)');
      } else if (need === 'task') {
        this.taskTool();
      } else {
        this.role(need);
      }
    }
  }

  /**
   * The tool of a role, offered by the server in this check's generation (and able to run as a task where the
   * role needs one).
   */
  role<R extends keyof ToolRoles>(name: R): NonNullable<ToolRoles[R]> {
    const ref = this.map.roles[name];
    if (!ref) skip(`the tool map has no "${name}" tool (set it with --tools-map)`);
    const tools =
      name === 'sideEffect' ? [(ref as NonNullable<ToolRoles['sideEffect']>).tool, (ref as NonNullable<ToolRoles['sideEffect']>).readTool] : [ref as ToolRef];
    for (const tool of tools) {
      const info = this.served.tools.get(tool.tool);
      if (!info) skip(`the server's ${this.generation} tools/list has no "${tool.tool}" (tool map role ${name}; set it with --tools-map)`);
      if (this.generation === 'v1') {
        const support = info.taskSupport ?? 'forbidden';
        if ((TASK_ROLES.has(name) || (name === 'sideEffect' && tool === tools[0])) && support === 'forbidden')
          skip(`"${tool.tool}" (role ${name}) has taskSupport "${support}" in the v1 tools/list; map a task-capable tool`);
        if (name === 'required' && support !== 'required')
          skip(`"${tool.tool}" (role required) has taskSupport "${support}", not "required"; map a task-only tool`);
        if (name === 'sync' && support !== 'forbidden') skip(`"${tool.tool}" (role sync) has taskSupport "${support}"; map a tool that never runs as a task`);
      }
    }
    return ref as NonNullable<ToolRoles[R]>;
  }

  /**
   * A tool that runs as a task, for checks that only need one to exist: the slow tool, else the side-effect tool,
   * the input tool, the tool-error, throwing or task-only tool — the first the map names and the server offers.
   */
  taskTool(): ToolRef {
    const reasons: string[] = [];
    for (const name of ['slow', 'sideEffect', 'asksInput', 'toolError', 'throws', 'required'] as const) {
      try {
        const ref = this.role(name);
        return name === 'sideEffect' ? (ref as NonNullable<ToolRoles['sideEffect']>).tool : (ref as ToolRef);
      } catch (error) {
        reasons.push((error as Error).message);
      }
    }
    skip(`no mapped tool can run as a task: ${reasons[0] ?? ''}`);
  }

  /** Arguments of a role's tool with placeholders filled in (`$key` defaults to this check's key). */
  args(ref: ToolRef, values: Placeholders = {}): Record<string, unknown> {
    return argumentsFor(ref, { key: this.key, ...values });
  }

  /** A new 2025-11-25 session for a principal (closed when the check ends). */
  async session(who: Principal = 'a', options: Omit<V1SessionOptions, 'token'> = {}, endpoint: Endpoint = this.endpoint): Promise<V1Session> {
    const token = this.token(who);
    const session = await V1Session.open(endpoint, { ...options, ...(token === undefined ? {} : { token }) });
    this.sessions.push(session);
    return session;
  }

  /** A v1 task wire on a new session of `who`. */
  async v1(who: Principal = 'a', endpoint: Endpoint = this.endpoint): Promise<V1TaskWire> {
    return new V1TaskWire(await this.session(who, {}, endpoint));
  }

  /** A v2 task wire for `who`. */
  v2(who: Principal = 'a', endpoint: Endpoint = this.endpoint): V2TaskWire {
    return new V2TaskWire(endpoint, this.token(who));
  }

  /** A task wire of this check's generation for `who` (v1: on a new session). */
  async wire(who: Principal = 'a', endpoint: Endpoint = this.endpoint): Promise<TaskWire> {
    return this.generation === 'v1' ? this.v1(who, endpoint) : this.v2(who, endpoint);
  }

  /**
   * Call a tool as a task and return the created task (tracked: cancelled at the end unless terminal).
   * Fails when the answer is not a `CreateTaskResult`.
   */
  async createTask(wire: TaskWire, ref: ToolRef, values: Placeholders = {}, options: CallOptions = {}): Promise<TaskState> {
    const answer = await wire.call(ref.tool, this.args(ref, values), options);
    const task = wire.createdTask(answer);
    if (!task) fail(`tools/call ${ref.tool} as a task (${wire.generation}): expected a CreateTaskResult, got ${describe(answer)}`, answer);
    this.track(wire, task.taskId, task.status);
    const ttl = task.raw.ttl ?? task.raw.ttlMs;
    if (typeof ttl === 'number') this.expiries.set(task.taskId, Date.parse(String(task.raw.createdAt)) + ttl);
    return task;
  }

  /** Remember a task so that it is cancelled at the end unless it was seen terminal. */
  track(wire: TaskWire, taskId: string, status = 'working'): void {
    const known = this.created.find((entry) => entry.taskId === taskId);
    if (known) {
      // The wire that saw it last is the one clean-up uses (the first may have been cut by the fault proxy).
      known.status = status;
      known.wire = wire;
    } else this.created.push({ wire, taskId, status });
  }

  /** `tasks/get` that must succeed; returns the task. */
  async getTask(wire: TaskWire, taskId: string, what = `tasks/get ${taskId}`): Promise<{ task: TaskState; answer: WireAnswer }> {
    const answer = await wire.get(taskId);
    const expiry = this.expiries.get(taskId);
    if (answer.response?.error && expiry !== undefined && Date.now() > expiry) {
      // Deleting a task after its TTL is allowed (R20, E20), so this proves nothing either way: not verified.
      skip(
        `${what}: ${describe(answer)} — the task's ttl ran out ${Date.now() - expiry} ms ago, before the check was done with it; the server's retention is too short for this check here (give the test instance a longer TTL)`,
      );
    }
    expectResult(answer, what);
    const task = wire.taskOf(answer);
    if (!task) fail(`${what}: the result is not a task`, answer);
    this.track(wire, taskId, task.status);
    return { task, answer };
  }

  /** How long to wait before the next poll: the server's hint, clamped to 50 ms – 2 s. */
  pollWait(task: TaskState | undefined): number {
    return Math.min(MAX_POLL_WAIT_MS, Math.max(MIN_POLL_WAIT_MS, task?.pollIntervalMs ?? 500));
  }

  /**
   * Poll `tasks/get` (at the server's interval, clamped) until `until` holds; every seen task goes to `seen`.
   * Fails when a poll errors or the task does not get there within `timeoutMs`.
   */
  async poll(
    wire: TaskWire,
    taskId: string,
    until: (task: TaskState) => boolean,
    options: { timeoutMs?: number; what?: string; seen?: TaskState[] } = {},
  ): Promise<TaskState> {
    const timeoutMs = options.timeoutMs ?? 15_000;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { task, answer } = await this.getTask(wire, taskId);
      options.seen?.push(task);
      if (until(task)) return task;
      if (Date.now() > deadline) fail(`${options.what ?? `task ${taskId}`}: still "${task.status}" after ${timeoutMs} ms`, answer);
      await this.sleep(this.pollWait(task));
    }
  }

  /** Poll until the task is terminal. */
  waitTerminal(wire: TaskWire, taskId: string, timeoutMs = 15_000, seen?: TaskState[]): Promise<TaskState> {
    return this.poll(wire, taskId, (task) => TERMINAL_STATUSES.has(task.status), { timeoutMs, what: `task ${taskId} to end`, ...(seen ? { seen } : {}) });
  }

  /**
   * The count of a side-effect counter (role `sideEffect`, `readTool` called inline).
   * Fails when the read tool does not answer with a number.
   */
  async readSideEffects(wire: TaskWire): Promise<number> {
    const { readTool } = this.role('sideEffect');
    const answer = await wire.call(readTool.tool, this.args(readTool), { task: false, capabilities: {} });
    const result = expectResult(answer, `${readTool.tool} (side-effect read tool)`);
    const count = readCount(result);
    if (count === undefined) fail(`${readTool.tool} returned no count (structuredContent.count or a number in its text)`, answer);
    return count;
  }

  /** Cancel the tasks this check left running, run clean-ups, close its sessions. Never throws. */
  async cleanUp(): Promise<void> {
    const live = AbortSignal.timeout(15_000);
    for (const endpoint of this.endpoints) endpoint.signal = live;
    for (const entry of this.created) {
      if (TERMINAL_STATUSES.has(entry.status)) continue;
      await entry.wire.cancel(entry.taskId, { timeoutMs: 3000 }).catch(() => undefined);
    }
    for (const cleanup of this.cleanups) await cleanup().catch(() => undefined);
    for (const session of this.sessions) await session.close().catch(() => undefined);
  }
}
