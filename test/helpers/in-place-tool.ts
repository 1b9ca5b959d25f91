import { z } from 'zod';

import { defineTool, textResult } from '../../src/core/tool.js';
import { CONFIRM_SCHEMA } from './callers.js';

/** What a {@link countingInPlaceTool}'s runs did: started, aborted, and the runs (numbered from 1) whose code after the question ran. */
export interface InPlaceRunCounts {
  runs: number;
  aborted: number;
  resumed: number[];
}

/**
 * An idempotent tool that asks one yes/no question and waits for it in place (`elicits: 'in-place'`), standing for a
 * forwarded upstream call: counts its runs into `counts`, then awaits `afterAnswer()` (a test holds a run there)
 * and answers `run <n>: <action>`.
 */
export function countingInPlaceTool(counts: InPlaceRunCounts, afterAnswer: () => Promise<void> = () => Promise.resolve()) {
  return defineTool({
    name: 'forwarded',
    description: 'stands for a forwarded upstream call',
    execution: 'task-optional',
    idempotent: true,
    elicits: 'in-place',
    inputSchema: z.object({}),
    async run(_args, ctx) {
      const run = (counts.runs += 1);
      ctx.signal.addEventListener('abort', () => (counts.aborted += 1));
      const answer = await ctx.elicit({ message: 'Go on?', requestedSchema: CONFIRM_SCHEMA });
      counts.resumed.push(run);
      await afterAnswer();
      return textResult(`run ${run}: ${answer.action}`);
    },
  });
}
