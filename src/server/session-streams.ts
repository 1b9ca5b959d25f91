import type { AuthInfo, Server } from '@modelcontextprotocol/server';

import type { TaskEventFeed } from '../core/event-feed.js';
import type { SessionStore } from '../core/session-store.js';
import type { TaskEvent } from '../core/store.js';
import type { TaskCaller } from '../service/caller.js';
import type { HandlerDeps } from './deps.js';
import { identityOf, sessionCaller } from './request-caller.js';
import type { V1SessionNotifier } from './v1-notifications.js';

/** Most open tasks of one session followed when its GET stream opens (older ones are still polled by the client, R35). */
const MAX_FOLLOWED_ON_OPEN = 1_000;

interface OpenStream {
  /** GET streams of the session held here (a second one is refused by the SDK with 409, but counts while it lasts). */
  count: number;
  notifier: V1SessionNotifier;
  caller: TaskCaller;
}

/**
 * The v1 (2025-11-25) GET streams held by this instance, and the tasks they carry (issue 11 item 5): behind a
 * round-robin load balancer a session's `tools/call` may land on instance A while its GET stream is held by B. While
 * B holds the stream, B's session notifier follows every non-terminal task of the session — those open when the
 * stream starts (`SessionStore.openSessionTasks`) and those created later on any instance (their `created` event
 * carries `{sessionId}` and reaches B through the event feed: LISTEN/NOTIFY on PostgreSQL, the tail on SQLite) — so
 * `notifications/tasks/status` (and progress of tasks running in B's own worker) reach that stream. One feed
 * subscription per process; no polling of its own. When the stream ends, the session's tasks are no longer followed.
 */
export class SessionStreams {
  private readonly open = new Map<string, OpenStream>();
  private stopFeed: (() => void) | undefined;

  constructor(
    private readonly feed: TaskEventFeed,
    private readonly sessions: SessionStore,
    private readonly deps: Pick<HandlerDeps, 'sessionNotifiers' | 'logger'>,
    /** Off only in the negative control of the several-instances test (see {@link streamFollowEnabled}). */
    private readonly enabled: boolean = streamFollowEnabled(),
  ) {}

  /**
   * A GET stream of session `sessionId` (served by `server`, owned by `ownerKey`) opened here; returns the function
   * to call once it ends (idempotent).
   */
  attach(sessionId: string, server: Server, ownerKey: string, authInfo?: AuthInfo): () => void {
    const notifier = this.deps.sessionNotifiers.get(server);
    const caller = sessionCaller(server, { ownerKey, scopes: identityOf(authInfo).scopes });
    // Counted whether or not the stream follows the session's tasks: the notifier pushes its own tasks while it lasts.
    const streamEnded = notifier?.streamOpened() ?? (() => {});
    if (!this.enabled || !notifier || caller.generation !== 'v1') return streamEnded;
    const held = this.open.get(sessionId);
    if (held && held.notifier === notifier) held.count += 1;
    else {
      this.open.set(sessionId, { count: 1, notifier, caller: caller as TaskCaller });
      this.stopFeed ??= this.feed.subscribeAll((event) => this.onEvent(event));
      // Subscribed before the read, so a task created meanwhile is found by one side or both (followed once).
      void this.followOpen(sessionId, notifier, caller as TaskCaller);
    }
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      streamEnded();
      this.release(sessionId, notifier);
    };
  }

  /** Stop following everything (shutdown). */
  close(): void {
    this.stopFeed?.();
    this.stopFeed = undefined;
    this.open.clear();
  }

  private async followOpen(sessionId: string, notifier: V1SessionNotifier, caller: TaskCaller): Promise<void> {
    try {
      const taskIds = await this.sessions.openSessionTasks(sessionId, MAX_FOLLOWED_ON_OPEN);
      await Promise.all(taskIds.map((taskId) => notifier.follow(caller, taskId)));
    } catch (error) {
      this.deps.logger.debug({ err: error }, 'reading the open tasks of a legacy session failed');
    }
  }

  private onEvent(event: TaskEvent): void {
    if (event.kind !== 'created') return;
    const sessionId = event.payload?.sessionId;
    if (typeof sessionId !== 'string') return;
    const held = this.open.get(sessionId);
    if (!held) return;
    if (held.notifier.isClosed) {
      this.open.delete(sessionId);
      return;
    }
    void held.notifier.follow(held.caller, event.taskId);
  }

  private release(sessionId: string, notifier: V1SessionNotifier): void {
    const held = this.open.get(sessionId);
    if (!held || held.notifier !== notifier) return;
    held.count -= 1;
    if (held.count > 0) return;
    this.open.delete(sessionId);
    notifier.untrackAll();
    if (this.open.size === 0) {
      this.stopFeed?.();
      this.stopFeed = undefined;
    }
  }
}

/**
 * TEST HOOK, inert unless set: `MCP_TASKS_TEST_NO_STREAM_FOLLOW=1` in a server's environment turns the following
 * off (the GET stream then carries only tasks created through this instance's copy of the session), the negative
 * control of `test/e2e/several-instances.test.ts`. Nothing else reads the variable.
 */
export function streamFollowEnabled(): boolean {
  return process.env.MCP_TASKS_TEST_NO_STREAM_FOLLOW !== '1';
}
