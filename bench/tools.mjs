// The benchmark server's tools, loaded through the normal tool API:
//   node dist/cli/main.js serve --no-builtins --tools ./bench/tools.mjs --port 3200 --data-dir /tmp/mcp-bench
// Both are task-optional: a task when the requestor can take one (v1 `task` param, v2 declared extension).
import { z } from 'zod';

import { defineTool, textResult } from '../dist/tool.js';

/** Resolve after `ms`, or reject with the signal's reason when the task is cancelled, expires or the server stops. */
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export default [
  defineTool({
    name: 'noop',
    description: 'Completes at once (measures the runtime, not the tool).',
    execution: 'task-optional',
    idempotent: true,
    inputSchema: z.object({}),
    async run() {
      return textResult('ok');
    },
  }),
  defineTool({
    name: 'sleep_ms',
    description: 'Waits `ms` milliseconds, then completes; cancellable.',
    execution: 'task-optional',
    idempotent: true,
    inputSchema: z.object({ ms: z.number().int().min(0).max(86_400_000) }),
    async run({ ms }, ctx) {
      await sleep(ms, ctx.signal);
      return textResult(`slept ${ms} ms`);
    },
  }),
];
