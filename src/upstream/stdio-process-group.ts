/**
 * A stdio upstream's child runs as the leader of a process group of its own, and is ended with its group (issue 28).
 *
 * Why: an upstream is often started through a launcher — `npx -y some-server`, `sh -c "node server.js"` — and then
 * the server is the launcher's child, not ours. The SDK's `StdioClientTransport` signals only the process it
 * spawned, so a start that timed out, a closed connection or our shutdown ended the launcher and left the server
 * running. A group holds the launcher and whatever it started (unless one of them leaves it for a group of its
 * own), and `process.kill(-pid, …)` reaches them all.
 *
 * The SDK spawns with options of its own and offers no way to add `detached` to them, so `start` is re-done here:
 * the SDK's own, with the child spawned detached (POSIX: `setsid`, a new session whose group id is the child's pid).
 * It relies on the SDK transport's private fields, named in {@link SdkStdioFields}; a test starts a real transport,
 * so an SDK that renames them fails there. The SDK's sibling probe for version negotiation is made for its base
 * class only (it checks the prototype owns `_dispose`), so a subclass never takes that path.
 *
 * What a group cannot do: when this process is killed with SIGKILL no one signals the group (nor, before, the
 * child). The child then sees its input close, which ends most servers; one that ignores it keeps running.
 */
import { type ChildProcess, spawn } from 'node:child_process';

import type { ReadBuffer } from '@modelcontextprotocol/client';
import { getDefaultEnvironment, StdioClientTransport, type StdioServerParameters } from '@modelcontextprotocol/client/stdio';

/** How long each step of the teardown waits for the group to close before the next, harder one (ms): the SDK's. */
const TEARDOWN_STEP_MS = 2000;

/** The SDK transport's private fields that `start` and `close` use (`@modelcontextprotocol/client` 2.x). */
interface SdkStdioFields {
  _process?: ChildProcess;
  _readBuffer: ReadBuffer;
  _serverParams: StdioServerParameters;
  _stderrStream: NodeJS.WritableStream | null;
  processReadBuffer(): void;
}

/**
 * Send `signal` to every process of the group `pid` leads; nothing happens when none is left.
 * Used at this process's `exit` as well, where nothing can be awaited.
 */
export function signalProcessGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group has no process left.
  }
}

/**
 * The SDK's stdio transport, with its child leading a process group and the group signalled: `close` keeps the SDK's
 * order — input closed, SIGTERM after 2 s, SIGKILL after 2 s more — applied to the group, and a step is skipped once
 * the child's output is closed and the child exited (the SDK's `close` event; a server the launcher started holds
 * the output until it ends). When the child closes, by itself or at `close`, whatever is left of its group (a
 * helper that let go of the output) gets SIGTERM.
 */
export class ProcessGroupStdioTransport extends StdioClientTransport {
  override start(): Promise<void> {
    const sdk = this as unknown as SdkStdioFields;
    if (sdk._process) throw new Error('ProcessGroupStdioTransport already started');
    const params = sdk._serverParams;
    return new Promise((resolve, reject) => {
      // The SDK's spawn (cross-spawn, which is node's spawn on POSIX) with `detached`.
      const child = spawn(params.command, params.args ?? [], {
        env: { ...getDefaultEnvironment(), ...params.env },
        stdio: ['pipe', 'pipe', params.stderr ?? 'inherit'],
        shell: false,
        cwd: params.cwd,
        detached: true,
      });
      sdk._process = child;
      child.on('error', (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.on('spawn', () => resolve());
      child.on('close', () => {
        if (child.pid !== undefined) signalProcessGroup(child.pid, 'SIGTERM');
        sdk._process = undefined;
        this.onclose?.();
      });
      child.stdin?.on('error', (error) => this.onerror?.(error));
      child.stdout?.on('data', (chunk: Buffer) => {
        try {
          sdk._readBuffer.append(chunk);
          sdk.processReadBuffer();
        } catch (error) {
          this.onerror?.(error as Error);
          this.close().catch(() => undefined);
        }
      });
      child.stdout?.on('error', (error) => this.onerror?.(error));
      if (sdk._stderrStream && child.stderr) child.stderr.pipe(sdk._stderrStream);
    });
  }

  override async close(): Promise<void> {
    const sdk = this as unknown as SdkStdioFields;
    const child = sdk._process;
    sdk._process = undefined;
    if (child?.pid !== undefined) {
      const { pid } = child;
      const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
      const closedWithin = (ms: number): Promise<boolean> =>
        Promise.race([closed.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref())]);
      try {
        child.stdin?.end();
      } catch {
        // its input is gone already
      }
      if (!(await closedWithin(TEARDOWN_STEP_MS))) {
        signalProcessGroup(pid, 'SIGTERM');
        if (!(await closedWithin(TEARDOWN_STEP_MS))) signalProcessGroup(pid, 'SIGKILL');
      }
    }
    sdk._readBuffer.clear();
  }
}
