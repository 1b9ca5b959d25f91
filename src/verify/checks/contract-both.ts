/** Contract checks that mean the same on both generations. */
import type { CheckDefinition } from '../check.js';
import { fail } from '../expect.js';
import { both, illegalTransition } from './shared.js';

export const contractBothChecks: CheckDefinition[] = [
  ...both({
    id: 'status.lifecycle',
    title: 'statuses across polls follow the state machine; a terminal status repeats on five further polls',
    gate: 'contract',
    rules: { v1: ['C-V1-10', 'R16'], v2: ['E12', 'E19'] },
    needs: ['slow'],
    async run(ctx) {
      const wire = await ctx.wire('a');
      const created = await ctx.createTask(wire, ctx.role('slow'), { ms: 800 });
      const seen = [created];
      await ctx.waitTerminal(wire, created.taskId, 15_000, seen);
      for (let poll = 0; poll < 5; poll += 1) {
        await ctx.sleep(ctx.pollWait(seen.at(-1)));
        const { task, answer } = await ctx.getTask(wire, created.taskId);
        seen.push(task);
        const illegal = illegalTransition(seen.map((entry) => entry.status));
        if (illegal) fail(`illegal transition ${illegal} (observed ${seen.map((entry) => entry.status).join(' → ')}; terminal states never change)`, answer);
      }
      ctx.measure('statuses', seen.map((entry) => entry.status).join(' → '));
    },
  }),
];
