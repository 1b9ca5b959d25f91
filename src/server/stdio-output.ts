import { Console } from 'node:console';
import { syncBuiltinESMExports } from 'node:module';

/**
 * Give the MCP stdio channel file descriptor 1 to itself (`serve --stdio`), and return the stream it writes to.
 *
 * On stdio, stdout carries JSON-RPC and nothing else: a tool's `console.log` or `process.stdout.write` (a common habit,
 * and what a library it calls may do) landed between the messages, and a client that parses every line failed — a
 * tool could break its own session and every other one on that process (stop 43's newcomer: 2,000 lines of a tool's
 * output among 2 answers). From here on `process.stdout` is `process.stderr` for everything in the process: in-process
 * tools, worker threads created later (Node pipes a thread's stdout into the parent's `process.stdout` as it stands
 * when the thread starts, so this must run before the executor's warm pool), and the global `console`. Writes that go
 * to the descriptor directly are not caught: `fs.writeSync(1, …)`, and a child process a tool starts with its stdio
 * inherited (`spawn(…, {stdio: 'inherit'})`), which writes to descriptor 1 itself.
 * @returns the process's original stdout, for the stdio transport only.
 */
export function reserveStdoutForProtocol(): NodeJS.WriteStream {
  const protocol = process.stdout;
  Object.defineProperty(process, 'stdout', { configurable: true, enumerable: true, get: () => process.stderr });
  // `import { stdout } from 'node:process'` is a binding of its own, taken when the module was first imported.
  syncBuiltinESMExports();
  globalThis.console = new Console({ stdout: process.stderr, stderr: process.stderr });
  // What tools print now goes to stderr; a client that closed its end of it (EPIPE) must not end the process and
  // every session on it with an uncaught error. Nothing can be said about that anywhere.
  process.stderr.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
  return protocol;
}
