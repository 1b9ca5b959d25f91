/**
 * The targets of the fuzzers: a real `mcp-tasks serve` process, and raw stdio lines to it (any bytes, answers
 * matched by id). Raw HTTP requests go through `test/helpers/raw-http.ts`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');

/** A running `mcp-tasks serve` process. */
export interface ServeProcess {
  child: ChildProcess;
  stderr(): string;
  /** Whether it is still running (no crash). */
  alive(): boolean;
  /** SIGTERM, and wait for the exit. @returns the exit code. */
  stop(): Promise<number | null>;
}

/** Spawn `mcp-tasks serve …args` with stdin/stdout piped (stdio mode) or ignored (HTTP mode). */
export function spawnServe(args: string[], env: Record<string, string> = {}, stdio: 'pipe' | 'http' = 'http'): ServeProcess {
  const child = spawn(process.execPath, [MAIN, 'serve', ...args], {
    stdio: [stdio === 'pipe' ? 'pipe' : 'ignore', stdio === 'pipe' ? 'pipe' : 'ignore', 'pipe'],
    // Processes of one store must share its secret (issue 11): one value for every process the fuzzer starts.
    env: { MCP_TASKS_SECRET: 'fuzz-shared-secret-0123456789abcdef', ...process.env, ...env },
  });
  let stderr = '';
  child.stderr?.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<number | null>((resolveExit) => child.once('exit', (code) => resolveExit(code)));
  return {
    child,
    stderr: () => stderr,
    alive: () => child.exitCode === null && child.signalCode === null,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        if (stdio === 'pipe') child.stdin?.end();
        else child.kill('SIGTERM');
      }
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/**
 * Newline-delimited JSON-RPC over a stdio server process: lines go out as given, answers are matched to requests by
 * id; answers with `id: null` (unreadable requests) are counted.
 */
export class StdioPeer {
  private buffer = '';
  private readonly waiting = new Map<string, (message: Record<string, unknown>) => void>();
  private readonly early = new Map<string, Record<string, unknown>>();
  /** Answers that carried `id: null`. */
  nullIdAnswers: Array<Record<string, unknown>> = [];
  /** Lines on stdout that were not JSON (must stay empty: only MCP goes to stdout). */
  junk: string[] = [];

  constructor(private readonly server: ServeProcess) {
    server.child.stdout?.setEncoding('utf8');
    server.child.stdout?.on('data', (chunk: string) => {
      this.buffer += chunk;
      let index: number;
      while ((index = this.buffer.indexOf('\n')) >= 0) {
        const line = this.buffer.slice(0, index);
        this.buffer = this.buffer.slice(index + 1);
        if (line.trim().length > 0) this.receive(line);
      }
    });
  }

  private receive(line: string): void {
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(line) as Record<string, unknown>;
    } catch {
      this.junk.push(line.slice(0, 200));
      return;
    }
    if (message.id === null) {
      this.nullIdAnswers.push(message);
      return;
    }
    if (!('result' in message) && !('error' in message)) return; // a notification or a server request
    const key = JSON.stringify(message.id);
    const resolveWaiter = this.waiting.get(key);
    if (resolveWaiter) {
      this.waiting.delete(key);
      resolveWaiter(message);
    } else this.early.set(key, message);
  }

  /** Write one raw line (a newline is appended). */
  write(line: string): void {
    this.server.child.stdin?.write(`${line}\n`);
  }

  /**
   * Write `line` and wait for the answer with `id`.
   * @throws Error when none arrives within `timeoutMs` (a hang).
   */
  async request(id: string | number, line: string, timeoutMs: number): Promise<Record<string, unknown>> {
    const key = JSON.stringify(id);
    const answer = new Promise<Record<string, unknown>>((resolveAnswer, reject) => {
      const early = this.early.get(key);
      if (early) {
        this.early.delete(key);
        resolveAnswer(early);
        return;
      }
      const timer = setTimeout(() => {
        this.waiting.delete(key);
        reject(new Error(`no answer within ${timeoutMs} ms (hang) to ${line.slice(0, 200)}`));
      }, timeoutMs);
      this.waiting.set(key, (message) => {
        clearTimeout(timer);
        resolveAnswer(message);
      });
    });
    this.write(line);
    return answer;
  }
}
