import type { ConnectionEvent, TaskSnapshot } from '../client/index.js';
import { toModelLine } from '../protocol/model-text.js';
import { taskCommand } from './invocation.js';

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const REDRAW_MS = 250;
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** The stream a status line writes to (stderr); `isTTY`/`columns` decide the rendering. */
export interface StatusStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/**
 * Live task progress on stderr. On a terminal: one line, redrawn in place with a spinner, the time since the command
 * started (not since the first status, which comes after the connection and the call — a newcomer saw "0.0s" a
 * second and a half in), the status and `statusMessage`. Otherwise (pipes, CI logs): a plain line only when the
 * status or message of a running task changes.
 */
export class StatusLine {
  /** When this command started (epoch ms): the process's start. */
  private readonly startedAt = Date.now() - process.uptime() * 1000;
  private last: TaskSnapshot | undefined;
  private printed = '';
  private frame = 0;
  private timer: NodeJS.Timeout | undefined;
  private suspended = false;
  /** The highest attempt number the server reported so far (`_meta["dev.mcp-tasks/attempt"]`). */
  private attempt: number | undefined;
  /** The last progress count seen in a status message of that attempt, for the restart notice. */
  private progress: { done: number; total: number } | undefined;

  /**
   * @param answersHere - this command answers the task's questions itself (it prints its own notice when it
   *   cannot), so `input_required` is shown without the hint to answer from another shell.
   * @param knownAttempt - the attempt this requestor saw last time (its journal's `lastAttempt`): `resume` in a new
   *   process then still says that the server re-ran the task in between, instead of showing the new run's progress
   *   as if it were the one it left.
   */
  constructor(
    private readonly stream: StatusStream,
    private readonly taskId: string,
    private readonly answersHere = false,
    knownAttempt?: number,
  ) {
    this.attempt = knownAttempt;
  }

  /** Show a new snapshot. */
  update(snapshot: TaskSnapshot): void {
    const changed = snapshot.status !== this.last?.status || snapshot.statusMessage !== this.last?.statusMessage;
    if (snapshot.attempt !== undefined) {
      // Recovery re-ran the task (its process died): the server's attempt number says so, also when the new run's
      // first status carries no progress count at all. Never guessed from progress text going back.
      if (this.attempt !== undefined && snapshot.attempt > this.attempt) {
        const was = this.progress ? ` (the previous run had reached ${this.progress.done}/${this.progress.total})` : '';
        this.notice(`task ${this.taskId} was restarted by the server: attempt ${snapshot.attempt}, its progress starts again${was}`);
        this.progress = undefined;
      }
      if (this.attempt === undefined || snapshot.attempt >= this.attempt) {
        this.attempt = snapshot.attempt;
        this.progress = progressOf(snapshot.statusMessage) ?? this.progress;
      }
    }
    this.last = snapshot;
    if (this.suspended) return;
    if (this.stream.isTTY) {
      this.timer ??= setInterval(() => this.draw(), REDRAW_MS).unref();
      this.draw();
    } else if (changed && !TERMINAL.has(snapshot.status)) {
      // The outcome itself is reported right after, once; a "completed" progress line would only repeat it.
      this.stream.write(`mcp-tasks: task ${this.taskId} ${describe(snapshot, this.answersHere ? undefined : this.taskId)}\n`);
    }
  }

  /** Say that the server became unreachable or reachable again; the task keeps its id meanwhile. */
  connection(event: ConnectionEvent): void {
    if (event.state === 'unreachable') {
      const reason = event.error.message.replace(/\s+/g, ' ');
      this.notice(`server unreachable (${reason}); task ${this.taskId} keeps its id — retrying in ${(event.retryInMs / 1000).toFixed(1)} s`);
    } else {
      this.notice(`server reachable again after ${(event.downMs / 1000).toFixed(1)} s; following task ${this.taskId}`);
    }
  }

  /** A line of its own above the status line. */
  private notice(text: string): void {
    const redraw = this.stream.isTTY && this.printed !== '';
    if (redraw) this.stream.write('\r\x1b[2K');
    this.printed = '';
    this.stream.write(`mcp-tasks: ${text}\n`);
    if (redraw && !this.suspended) this.draw();
  }

  /** Erase the terminal line and stop redrawing (call before printing anything else). */
  clear(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.stream.isTTY && this.printed) this.stream.write('\r\x1b[2K');
    this.printed = '';
  }

  /** Erase the line and draw nothing until the returned function is called (a form is on screen). */
  suspend(): () => void {
    this.clear();
    this.suspended = true;
    return () => {
      this.suspended = false;
      if (this.last && this.stream.isTTY) this.update(this.last);
    };
  }

  private draw(): void {
    if (!this.last) return;
    this.frame = (this.frame + 1) % SPINNER.length;
    const elapsed = ((Date.now() - this.startedAt) / 1000).toFixed(1);
    const line = `${SPINNER[this.frame]} ${elapsed}s ${describe(this.last, this.answersHere ? undefined : this.taskId)}`;
    const width = Math.max(20, (this.stream.columns || 80) - 1); // 0 columns: a pseudo-terminal without a size
    this.printed = line.length > width ? `${line.slice(0, width - 1)}…` : line;
    this.stream.write(`\r\x1b[2K${this.printed}`);
  }
}

/** `done/total` progress in a status message, e.g. "scanned files (123/300)". */
function progressOf(message: string | undefined): { done: number; total: number } | undefined {
  const match = message?.match(/\((\d+)\/(\d+)\)/);
  return match ? { done: Number(match[1]), total: Number(match[2]) } : undefined;
}

/** The status and message of a snapshot; `hintFor` adds how to answer an `input_required` task from elsewhere. */
function describe(snapshot: TaskSnapshot, hintFor: string | undefined): string {
  // A server-provided message must not move the cursor, recolour the terminal or reorder the line: any server's
  // text is shown by the rule ours keeps (one line, no control or bidi characters, bounded).
  const message = snapshot.statusMessage === undefined ? undefined : toModelLine(snapshot.statusMessage);
  const status =
    snapshot.status === 'input_required' && hintFor !== undefined ? `input_required (answer with: ${taskCommand('answer', hintFor)})` : snapshot.status;
  return message ? `${status}: ${message}` : status;
}
