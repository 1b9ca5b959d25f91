// The tool of `npm run bench:results`: a result of `bytes` ASCII characters, made in the worker process.
import { z } from 'zod';

import { defineTool, textResult } from '../dist/tool.js';

export default [
  defineTool({
    name: 'big_result',
    description: 'Returns one text block of `bytes` ASCII characters.',
    execution: 'task-optional',
    inputSchema: z.object({
      bytes: z
        .number()
        .int()
        .min(1)
        .max(128 * 1024 * 1024),
    }),
    async run({ bytes }) {
      const line = 'mcp-tasks large result bench line 0123456789abcdefghijklmnopqrstuvwxyz. ';
      return textResult(line.repeat(Math.ceil(bytes / line.length)).slice(0, bytes));
    },
  }),
];
