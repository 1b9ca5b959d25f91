import { type MessagePort, receiveMessageOnPort } from 'node:worker_threads';

import { type HostReply, isThreadMessage, RUN_THREAD, type ThreadMessage } from './isolated-messages.js';

/**
 * What the host does with one message of a run, called in the order the run's thread sent them; `channel` is the
 * thread's channel, where a `call` is answered.
 */
export type RunListener = (message: ThreadMessage, channel: ThreadChannel) => void;

/** The host end of one thread's channel, as a run's listener sees it. */
export interface ThreadChannel {
  post(message: HostReply): void;
}

/**
 * The host ends of the pool threads' channels — one per warm thread, made by the thread when it warms up and kept for
 * its whole life — and the runs listening on them (issue 25: a `MessageChannel` made and transferred with every run
 * cost about 30 µs of CPU per run, host and thread together).
 *
 * Every message names its run; it goes to that run's listener only if it came on the channel of the thread that
 * took the run (the thread's id in the run's state array), else nowhere, like a message of a run that has ended (a
 * callback its tool left behind): a run never sees another run's messages, though runs of one thread, one after
 * another, share its channel, and a tool that gets hold of its thread's channel cannot speak for a run on another
 * thread by guessing its id (run ids count up). {@link drain} delivers what a thread has sent but this loop has not
 * read yet: the host calls it when a run's outcome arrives (on piscina's port, which is not ordered with this one) and
 * when a thread ends, so a run's start, last status, progress and logs are handled before its outcome.
 */
export class ThreadChannels {
  /** The open channels, by the `threadId` of their thread. */
  private readonly threads = new Map<number, { port: MessagePort; channel: ThreadChannel }>();
  /** The runs in progress: their listener and their state array (whose {@link RUN_THREAD} word names their thread). */
  private readonly listeners = new Map<number, { listener: RunListener; state: Int32Array }>();
  private lastRun = 0;

  /** Take the host end of thread `threadId`'s channel (from its `warm` report). */
  open(threadId: number, port: MessagePort): void {
    this.close(threadId);
    const thread = { port, channel: { post: (message: HostReply) => port.postMessage(message) } };
    port.on('message', (message: unknown) => this.deliver(message, threadId, thread.channel));
    // The thread's end closes with the thread (terminated, crashed, retired), after every message it sent.
    port.once('close', () => {
      if (this.threads.get(threadId) === thread) this.threads.delete(threadId);
    });
    // A warm thread's channel must not keep the process alive; a run in progress keeps piscina's port referenced.
    port.unref();
    this.threads.set(threadId, thread);
  }

  /** Thread `threadId` ended (or is replaced): deliver what it sent, then drop its channel. */
  close(threadId: number): void {
    const thread = this.threads.get(threadId);
    if (!thread) return;
    this.drain(threadId);
    this.threads.delete(threadId);
    thread.port.close();
  }

  /** A new run id, whose messages (from the thread `state` names) go to `listener` until {@link forget}. */
  listen(listener: RunListener, state: Int32Array): number {
    this.lastRun += 1;
    this.listeners.set(this.lastRun, { listener, state });
    return this.lastRun;
  }

  /** Run `run` has ended: its messages from now on are dropped (a `call` is answered with an error). */
  forget(run: number): void {
    this.listeners.delete(run);
  }

  /** Send `message` to thread `threadId`, if its channel is open. */
  post(threadId: number, message: HostReply): void {
    this.threads.get(threadId)?.channel.post(message);
  }

  /** Deliver now, in order, every message thread `threadId` sent that this loop has not read yet (see the class comment). */
  drain(threadId: number): void {
    const thread = this.threads.get(threadId);
    if (!thread) return;
    for (let queued = receiveMessageOnPort(thread.port); queued; queued = receiveMessageOnPort(thread.port))
      this.deliver(queued.message, threadId, thread.channel);
  }

  /** Threads with an open channel. */
  get size(): number {
    return this.threads.size;
  }

  private deliver(message: unknown, threadId: number, channel: ThreadChannel): void {
    // The channel is reachable by the thread's tools: a message of another shape is dropped, not read.
    if (!isThreadMessage(message)) return;
    const run = this.listeners.get(message.run);
    if (run && Atomics.load(run.state, RUN_THREAD) === threadId) run.listener(message, channel);
    // A call of an ended run would wait forever in its thread: it fails there instead.
    else if (message.op === 'call')
      channel.post({ op: 'reply', id: message.id, ok: false, error: { message: `the run that made this call has ended (${message.method})` } });
  }
}

/**
 * What ends the thread of one run: piscina's `signal` option in its event-emitter form (one listener, two fields)
 * rather than an `AbortController` per run, whose signal and listeners were part of a run's set-up cost (issue 25).
 * {@link terminate} makes piscina reject the run with an `AbortError`, end the thread and start its replacement.
 */
export class ThreadTermination {
  aborted = false;
  reason: unknown;
  private listener: (() => void) | undefined;

  /** piscina's registration (`onabort`); it keeps one listener per run. */
  once(_event: 'abort', listener: () => void): void {
    this.listener = listener;
  }

  off(): void {
    this.listener = undefined;
  }

  /** What piscina calls to unregister (its `onabort` uses `removeListener`; its types name `off`). */
  removeListener(): void {
    this.listener = undefined;
  }

  terminate(reason: string): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listener = this.listener;
    this.listener = undefined;
    listener?.();
  }
}
