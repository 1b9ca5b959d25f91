// Tools of the P7 benchmark (bench/several-instances.mjs), loaded by every process with `--tools`.
import { appendFileSync } from 'node:fs';

import { z } from 'zod';

export default function p7Tools() {
  return [
    {
      name: 'p7_echo',
      description: 'Returns the wall-clock time (epoch ms) at which it started.',
      execution: 'task-optional',
      idempotent: true,
      inputSchema: z.object({}),
      async run() {
        return { content: [{ type: 'text', text: String(Date.now()) }] };
      },
    },
    {
      name: 'p7_wait',
      description: 'Waits until aborted, then appends the abort time to log.',
      execution: 'task-optional',
      idempotent: true,
      inputSchema: z.object({ log: z.string(), id: z.string() }),
      async run({ log, id }, ctx) {
        appendFileSync(log, `${JSON.stringify({ id, event: 'start', at: Date.now() })}\n`);
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
        appendFileSync(log, `${JSON.stringify({ id, event: 'abort', at: Date.now() })}\n`);
        throw ctx.signal.reason;
      },
    },
  ];
}
