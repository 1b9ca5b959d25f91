import { sanitizeModelText } from '../../core/tool-outcome.js';

/**
 * Progress of an inline `tools/call` whose request carries a `progressToken` (2025-11-25 and 2026-07-28 base
 * protocol: `notifications/progress`, issue 27 §3). A client may abort a call that stays silent for its idle
 * timeout (Claude Code: 5 min by default, less when configured) even though the run is healthy; so the run's own
 * progress is forwarded, and while the tool reports nothing a keep-alive is sent every `keepAliveMs`.
 *
 * `progress` MUST increase with each notification (base protocol). The tool's `done` is sent when it is larger than
 * the last value sent; a keep-alive (or a `done` that does not increase) moves halfway to the next whole number, so
 * a tool counting whole units keeps its numbers; `total` is sent only while `progress` does not exceed it.
 */

/** One `notifications/progress` params body without its `progressToken` (the adapter adds it). */
export interface InlineProgressUpdate {
  progress: number;
  total?: number;
  /** One model-safe line (see `sanitizeModelText`). */
  message?: string;
}

/** Where the updates of one call go (the adapter's `ctx.mcpReq.notify`); must not throw. */
export type InlineProgressSink = (update: InlineProgressUpdate) => void;

/** The progress channel of one inline call: what the request asked for and how often to keep it alive. */
export interface InlineProgressChannel {
  sink: InlineProgressSink;
  /** Longest silence before a keep-alive (ms), `limits.progressKeepAliveMs`. */
  keepAliveMs: number;
}

/** Below this step a keep-alive moves by a whole unit instead (float halving would stop increasing). */
const SMALLEST_STEP = 1e-6;

/** One inline run's progress: {@link start} before the run, {@link report} from the tool, {@link stop} after. */
export class InlineProgress {
  private last = 0;
  private total: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly startedAt = Date.now();

  constructor(private readonly channel: InlineProgressChannel) {}

  /** Arm the keep-alive; a no-op after {@link stop}. */
  start(): void {
    if (!this.stopped) this.arm();
  }

  /** Forward `ctx.progress(done, total, message)` of the tool (`message` already formatted by the tool context). */
  report(done: number, total: number | undefined, message: string): void {
    if (this.stopped) return;
    if (total !== undefined && Number.isFinite(total) && total > 0) this.total = total;
    this.send(Number.isFinite(done) ? done : -Infinity, message);
  }

  /** Stop for good: no update is sent after the call's answer. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      const seconds = Math.round((Date.now() - this.startedAt) / 1000);
      this.send(-Infinity, `still running after ${seconds} s`);
    }, this.channel.keepAliveMs);
    this.timer.unref?.();
  }

  private send(candidate: number, message: string): void {
    if (this.stopped) return;
    if (candidate > this.last) this.last = candidate;
    else {
      const step = (Math.floor(this.last) + 1 - this.last) / 2;
      this.last += step < SMALLEST_STEP ? 1 : step;
    }
    const total = this.total !== undefined && this.last <= this.total ? { total: this.total } : {};
    try {
      this.channel.sink({ progress: this.last, ...total, message: sanitizeModelText(message) });
    } catch {
      // A client that went away is the transport's business; the run goes on.
    }
    this.arm();
  }
}
