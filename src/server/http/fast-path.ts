import type { IncomingMessage, ServerResponse } from 'node:http';

import type { AuthInfo } from '@modelcontextprotocol/server';

import { isStoreError } from '../../core/store-error.js';
import type { JsonObject, TaskRecord } from '../../core/task.js';
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  ErrorCode,
  PROTOCOL_VERSION_META_KEY,
  V1_PROTOCOL_VERSION,
  V2_PROTOCOL_VERSION,
} from '../../protocol/constants.js';
import type { Caller, CallerIdentity, TaskCaller } from '../../service/caller.js';
import type { CallPlan } from '../../service/calls/call-plan.js';
import type { ResultResource } from '../../service/tasks/result-reads.js';
import type { HandlerDeps } from '../deps.js';
import { requestCaller, sessionCaller } from '../request-caller.js';
import { bufferedResourceResult, resourceResultFields } from '../result-read-handler.js';
import { wireErrorOf } from '../store-errors.js';
import { readTaskV1, readTaskV2, terminalPayloadV1 } from '../task-replies.js';
import { callAnswer, toolCallOf } from '../tools-call.js';
import { writeJsonRpcError } from './respond.js';
import { streamResourceResult } from './result-stream.js';
import type { LegacySessions } from './v1-sessions.js';

/** A JSON-RPC request in its plain form. */
interface PlainRequest {
  jsonrpc: '2.0';
  id: string | number;
  method: string;
  params: Record<string, unknown>;
}

const SERVER_INFO_META_KEY = 'io.modelcontextprotocol/serverInfo';
const ENVELOPE_KEYS = new Set([PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY]);
/**
 * How long a blocking `tasks/result` whose session no statement has checked yet holds its response headers back
 * (ms; see `answerUnchecked`): long enough for a short task to end first, far below any client's header timeout.
 */
const HELD_HEADERS_MS = 1_000;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isPlainRequest(body: unknown): body is PlainRequest {
  return (
    isObject(body) &&
    body.jsonrpc === '2.0' &&
    typeof body.method === 'string' &&
    isObject(body.params) &&
    ((typeof body.id === 'string' && body.id.length > 0) || Number.isSafeInteger(body.id))
  );
}

/** Whether the params hold only the given keys (anything else goes to the SDK, which knows what to do with it). */
function onlyKeys(params: Record<string, unknown>, allowed: readonly string[]): boolean {
  return Object.keys(params).every((key) => allowed.includes(key));
}

/**
 * The fast path for the hot task requests (issue: performance, P1/P2): a task-creating `tools/call`, `tasks/get`
 * and — in 2025-11-25 sessions — `tasks/result` of a terminal task or of one whose tool never asks for input, plus `resources/read` of a large result, which
 * only this path streams without holding it (issue 10 §2), answered without building an SDK server and a
 * web `Request` per request. It takes a request only in its plain, fully valid form (headers matching the body, a
 * clean `_meta` envelope, known params) and hands everything else to the SDK, which owns every other answer
 * (header mismatches, `-32021`, MRTR, inline runs, blocking `tasks/result`). Its answers are produced by the same
 * functions the SDK handlers call, and `test/contract/fast-path.test.ts` proves them identical to the SDK path for
 * every status and error.
 */
export class FastPath {
  constructor(
    private readonly deps: HandlerDeps,
    private readonly sessions: LegacySessions,
  ) {}

  /** Answer `body` when it is one of the hot requests; `false` leaves it to the SDK path untouched. */
  async handle(request: IncomingMessage, response: ServerResponse, body: unknown, identity: CallerIdentity): Promise<boolean> {
    if (!isPlainRequest(body) || request.method !== 'POST') return false;
    const accept = request.headers.accept ?? '';
    if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return false;
    if (Object.keys(request.headers).some((name) => name.startsWith('mcp-param-'))) return false;
    const sessionId = request.headers['mcp-session-id'];
    return typeof sessionId === 'string' ? this.legacy(request, response, body, identity, sessionId) : this.modern(request, response, body, identity);
  }

  private async modern(request: IncomingMessage, response: ServerResponse, body: PlainRequest, identity: CallerIdentity): Promise<boolean> {
    const meta = body.params._meta;
    if (request.headers['mcp-protocol-version'] !== V2_PROTOCOL_VERSION || request.headers['mcp-method'] !== body.method || !isObject(meta)) return false;
    // Other `_meta` keys (a progress token, trace context) change no answer of resources/read, and the SDK path may
    // not hold a large result (issue 23 §5): such a read is still streamed here.
    const envelopeOnly = Object.keys(meta).every((key) => ENVELOPE_KEYS.has(key));
    if ((!envelopeOnly && body.method !== 'resources/read') || meta[PROTOCOL_VERSION_META_KEY] !== V2_PROTOCOL_VERSION) return false;
    const clientInfo = meta[CLIENT_INFO_META_KEY];
    if (clientInfo !== undefined && !(isObject(clientInfo) && typeof clientInfo.name === 'string' && typeof clientInfo.version === 'string')) return false;
    if (!isObject(meta[CLIENT_CAPABILITIES_META_KEY])) return false;
    const caller = requestCaller(identity, meta);
    if (caller.generation !== 'v2') return false;
    const name = request.headers['mcp-name'];
    if (body.method === 'tasks/get') {
      if (
        typeof body.params.taskId !== 'string' ||
        body.params.taskId.length === 0 ||
        name !== body.params.taskId ||
        !onlyKeys(body.params, ['taskId', '_meta'])
      )
        return false;
      const taskId = body.params.taskId;
      await this.answer(response, body.id, 'json', () => readTaskV2(this.deps, caller as TaskCaller, taskId, () => abortOnClose(response)));
      return true;
    }
    if (body.method === 'resources/read') {
      if (typeof body.params.uri !== 'string' || name !== body.params.uri || !onlyKeys(body.params, ['uri', '_meta'])) return false;
      await this.streamResource(response, body.id, 'json', caller, body.params.uri);
      return true;
    }
    if (body.method === 'tools/call') {
      const plan = name === body.params.name ? await this.creatable(caller, body.params) : undefined;
      if (!plan) return false;
      await this.answer(response, body.id, 'json', async () => callAnswer(this.deps, caller, await this.deps.service.calls.callTool(caller, plan)));
      return true;
    }
    return false;
  }

  private async legacy(
    request: IncomingMessage & { auth?: AuthInfo },
    response: ServerResponse,
    body: PlainRequest,
    identity: CallerIdentity,
    sessionId: string,
  ): Promise<boolean> {
    if (body.method !== 'tasks/get' && body.method !== 'tasks/result' && body.method !== 'tools/call' && body.method !== 'resources/read') return false;
    // A session held here is not read first for the round trip's requests (issue 25: that read was ~2 of ~9
    // statements of a PostgreSQL round trip, and one per poll): their first statement checks its record instead
    // (`guard`), and an answer that no such statement confirmed reads the record before it goes out (see `answer`).
    const foldable = body.method === 'tools/call' || body.method === 'tasks/result' || body.method === 'tasks/get';
    const held = foldable ? this.sessions.held(sessionId, identity.ownerKey) : undefined;
    const server = held ?? (await this.sessions.lookup(sessionId, identity.ownerKey, request.auth, request));
    if (!server) return false;
    const guard = held ? sessionId : undefined;
    const version = request.headers['mcp-protocol-version'];
    if (server.getNegotiatedProtocolVersion() !== V1_PROTOCOL_VERSION || (version !== undefined && version !== V1_PROTOCOL_VERSION)) return false;
    const caller = sessionCaller(server, identity);
    if (caller.generation !== 'v1') return false;
    const v1 = caller as TaskCaller;
    const frame = { sessionId };
    if (body.method === 'tools/call') {
      const plan = await this.creatable(caller, body.params);
      if (!plan) return false;
      const notifier = this.deps.sessionNotifiers.get(server);
      const onCreated = notifier && ((record: TaskRecord) => notifier.trackCreated(v1, record));
      // A replayed idempotency key is answered from a read, not from the (checking) create: read the session first.
      if (guard !== undefined && plan.call.idempotencyKey !== undefined && !(await this.sessions.stillExists(guard))) return false;
      const requireSession = guard !== undefined && plan.call.idempotencyKey === undefined;
      await this.answer(response, body.id, { ...frame, ...(requireSession ? { guard: sessionId } : {}) }, async () =>
        callAnswer(
          this.deps,
          caller,
          await this.deps.service.calls.callTool(caller, plan, {
            ...(onCreated ? { onCreated } : {}),
            sessionId,
            ...(requireSession ? { requireSession } : {}),
          }),
        ),
      );
      return true;
    }
    if (body.method === 'resources/read') {
      if (typeof body.params.uri !== 'string' || !onlyKeys(body.params, ['uri', '_meta'])) return false;
      await this.streamResource(response, body.id, frame, caller, body.params.uri);
      return true;
    }
    const taskId = body.params.taskId;
    if (typeof taskId !== 'string' || taskId.length === 0 || !onlyKeys(body.params, ['taskId', '_meta'])) return false;
    if (body.method === 'tasks/get') {
      // Held here: every read of the task checks the session; a task that reads as missing is answered 404 when the
      // record is gone (`answer` reads it then).
      await this.answer(response, body.id, { ...frame, ...(guard === undefined ? {} : { guard }) }, () =>
        readTaskV1(this.deps, caller, taskId, () => abortOnClose(response), guard),
      );
      return true;
    }
    // tasks/result: a terminal task, or one whose tool never asks for input — it blocks here until the task ends
    // (issue 25: the SDK path cost ~10 % of an API process's CPU under bench:instances). A task that may ask blocks
    // on the SDK path, which carries its questions on the call's stream (R29); so does one not visible here (the
    // SDK path answers the error).
    // Held here: the read checks the session too; a session deleted meanwhile reads as `undefined`, and the SDK path
    // then reads the record and answers 404.
    // The wait goes on from this read (one read of the task, not two; issue 25).
    const opened = await this.deps.service.tasks.openResultWait(v1, taskId, guard).catch(() => undefined);
    if (opened === undefined || opened === 'asks') return false;
    const { path, wait, uncheckedSession } = opened;
    if (uncheckedSession !== undefined) {
      // Started from the record this process created (no read): the wait's reads check the session.
      await this.answerUnchecked(response, body.id, uncheckedSession, (signal) => wait(signal).then((record) => terminalPayloadV1(this.deps, v1, record)));
      return true;
    }
    const produce = async (): Promise<JsonObject> => terminalPayloadV1(this.deps, v1, await wait(abortOnClose(response)));
    if (path === 'settled') await this.answer(response, body.id, frame, produce);
    else await this.answerLater(response, body.id, frame.sessionId, produce);
    return true;
  }

  /**
   * `resources/read` of a large task result, streamed from the store chunk by chunk (`result-stream.ts`); one chunk
   * resource is answered whole; a refusal (`-32602` "Resource not found" for anything that is not the caller's large
   * result or one of its chunks) is answered like any other.
   */
  private async streamResource(
    response: ServerResponse,
    id: string | number,
    framing: 'json' | { sessionId: string },
    caller: Caller,
    uri: string,
  ): Promise<void> {
    let resource: ResultResource;
    try {
      resource = await this.deps.service.tasks.readResultResource(caller, uri);
    } catch (error) {
      await this.answer(response, id, framing, () => Promise.reject(error));
      return;
    }
    // A chunk resource is small by construction: answered in one message, as on the SDK path.
    if (resource.chunk !== undefined) return this.answer(response, id, framing, () => bufferedResourceResult(caller.negotiation, resource));
    const fields = resourceResultFields(caller.negotiation, resource);
    if (framing === 'json') fields._meta = { [SERVER_INFO_META_KEY]: this.deps.serverInfo };
    await streamResourceResult(response, id, framing, resource, fields).catch((error: unknown) => {
      this.deps.logger.warn({ err: error, taskId: resource.taskId }, 'streaming a large result failed');
      response.destroy();
    });
  }

  /**
   * The service's plan when a `tools/call` in its plain form simply creates a task (no gather phase); `undefined`
   * leaves the request to the SDK path, which then answers everything else, refusals included, itself.
   */
  private async creatable(caller: Caller, params: Record<string, unknown>): Promise<Extract<CallPlan, { kind: 'task' }> | undefined> {
    if (!onlyKeys(params, ['name', 'arguments', 'task', '_meta'])) return undefined;
    if (params.arguments !== undefined && !isObject(params.arguments)) return undefined;
    try {
      const plan = await this.deps.service.calls.planCall(caller, toolCallOf(params));
      return plan.kind === 'task' && plan.tool.gather === undefined ? plan : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Run `produce` and write its result or JSON-RPC error as the SDK would: a JSON body on the modern path
   * (`_meta` serverInfo on results, B6), one SSE `message` event with the session id header in a 2025 session.
   * `framing.guard`: a session not read before `produce`, whose first statement checked it — an error answer
   * (which may have come before any statement) goes out only after a read of the record, and a deleted session
   * (the create refused with `gone`, or the read finding no record) is answered 404 as {@link LegacySessions.handle}
   * answers it.
   */
  private async answer(
    response: ServerResponse,
    id: string | number,
    framing: 'json' | { sessionId: string; guard?: string },
    produce: () => Promise<JsonObject>,
  ): Promise<void> {
    let failed: unknown;
    const message = await this.messageOf(id, framing, produce, (error) => (failed = error));
    if (framing !== 'json' && framing.guard !== undefined && 'error' in message) {
      if (isStoreError(failed, 'gone')) this.sessions.ended(framing.guard);
      if (isStoreError(failed, 'gone') || !(await this.sessions.stillExists(framing.guard))) {
        if (!response.destroyed) writeJsonRpcError(response, 404, null, ErrorCode.SessionNotFound, 'Session not found');
        return;
      }
    }
    if (response.destroyed) return;
    const text = JSON.stringify(message);
    // One buffer with its length: a single write, no chunked framing.
    if (framing === 'json') {
      const payload = Buffer.from(text);
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': payload.length }).end(payload);
    } else {
      const payload = Buffer.from(`event: message\ndata: ${text}\n\n`);
      response.writeHead(200, { ...sseHeaders(framing.sessionId), 'content-length': payload.length }).end(payload);
    }
  }

  /**
   * Like {@link answer} in a 2025 session, for an answer that may take long (a blocking `tasks/result`): the SSE
   * headers go out at once, as the SDK sends them, so the client's wait for response headers does not run out while
   * the task runs; the message follows as one `message` event.
   */
  private async answerLater(response: ServerResponse, id: string | number, sessionId: string, produce: () => Promise<JsonObject>): Promise<void> {
    response.writeHead(200, sseHeaders(sessionId));
    response.flushHeaders();
    const message = await this.messageOf(id, { sessionId }, produce);
    if (response.destroyed) return;
    response.end(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
  }

  /**
   * A blocking `tasks/result` of session `sessionId` that no statement has checked yet (its wait started from the
   * record this process created; `wait`'s own reads check the session). A session deleted before the request must be
   * answered 404 (as every request of a deleted session is), which cannot follow 200 headers: the answer is held
   * back for up to {@link HELD_HEADERS_MS} — most tasks end by then, and `answer` gives 404 when the wait found the
   * task missing with the session gone — and a wait still running then checks the session with one read before the
   * headers go out (404 and the wait stopped when it is gone).
   */
  private async answerUnchecked(
    response: ServerResponse,
    id: string | number,
    session: { id: string; checked(): void },
    wait: (signal: AbortSignal) => Promise<JsonObject>,
  ): Promise<void> {
    const sessionId = session.id;
    const stop = new AbortController();
    const result = wait(AbortSignal.any([abortOnClose(response), stop.signal]));
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([
      result.then(
        () => false,
        () => false,
      ),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), HELD_HEADERS_MS))),
    ]);
    clearTimeout(timer);
    if (!late) return this.answer(response, id, { sessionId, guard: sessionId }, () => result);
    let exists: boolean;
    try {
      exists = await this.sessions.stillExists(sessionId);
      // Checked, as a look's read checks it: the answer no longer depends on the record (see ResultWait.uncheckedSession).
      if (exists) session.checked();
    } catch {
      exists = true; // the store is unreachable: the wait's own reads will fail or check it
    }
    if (!exists) {
      stop.abort();
      result.catch(() => undefined);
      this.sessions.ended(sessionId);
      if (!response.destroyed) writeJsonRpcError(response, 404, null, ErrorCode.SessionNotFound, 'Session not found');
      return;
    }
    await this.answerLater(response, id, sessionId, () => result);
  }

  /**
   * The JSON-RPC answer to request `id`: `produce`'s result (stamped with serverInfo on the modern path, B6) or its
   * error (also given to `failed`).
   */
  private async messageOf(
    id: string | number,
    framing: 'json' | { sessionId: string },
    produce: () => Promise<JsonObject>,
    failed?: (error: unknown) => void,
  ): Promise<JsonObject> {
    try {
      const result = await produce();
      // `produce` builds a fresh object per answer, so the serverInfo stamp (B6) is added in place.
      if (framing === 'json') result._meta = { ...((result._meta as JsonObject | undefined) ?? {}), [SERVER_INFO_META_KEY]: this.deps.serverInfo };
      return { result, jsonrpc: '2.0', id };
    } catch (error) {
      failed?.(error);
      const wire = wireErrorOf(error, this.deps.logger);
      if (!wire) this.deps.logger.error({ err: error }, 'fast path request failed');
      return { jsonrpc: '2.0', id, error: (wire ?? { code: ErrorCode.InternalError, message: 'Internal error' }) as unknown as JsonObject };
    }
  }
}

/** The SSE response headers of a 2025-11-25 session's answer, as the SDK sends them. */
function sseHeaders(sessionId: string): Record<string, string> {
  return {
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'content-type': 'text/event-stream',
    'mcp-session-id': sessionId,
    'x-accel-buffering': 'no',
  };
}

/** An abort signal that fires when the client goes away before the answer (a held-back poll then ends early). */
function abortOnClose(response: ServerResponse): AbortSignal {
  const controller = new AbortController();
  response.once('close', () => {
    if (!response.writableFinished) controller.abort();
  });
  return controller.signal;
}
