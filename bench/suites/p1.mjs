// P1: task round trips/s with `noop`, per concurrency, with the SDK 1.32.2 reference measured right before ours at
// the same concurrency (same minute, same machine state) so the ratio is not skewed by drift.
import { loadFigure } from '../lib/context.mjs';
import { legacyRoundTrip, modernRoundTrip } from '../lib/flows.mjs';
import { LegacySession, ModernClient } from '../lib/mcp.mjs';

/** Closed loop of 2025-11-25 round trips, each client on its own session. */
function legacyLoop(url, clients) {
  return {
    clients,
    setup: () => new LegacySession(url).open(),
    iteration: (session) => legacyRoundTrip(session),
    teardown: (session) => session.close(),
  };
}

export async function p1(ctx) {
  for (const clients of ctx.options.concurrency) {
    await ctx.withServer(ctx.baseline('reference-sdk132'), async (server) => {
      const result = await ctx.load(server, legacyLoop(server.url, clients));
      ctx.record(`baseline.reference.roundTrip.c${clients}`, loadFigure(`SDK 1.32.2 reference, v1 round trips, ${clients} clients`, 'rt/s', result));
    });
    await ctx.withServer(ctx.ours(), async (server) => {
      const result = await ctx.load(server, legacyLoop(server.url, clients));
      ctx.record(`p1.v1.c${clients}`, loadFigure(`P1 ours, v1 round trips, ${clients} clients`, 'rt/s', result));
    }, { profile: `p1-v1-c${clients}` });
    await ctx.withServer(ctx.ours(), async (server) => {
      const result = await ctx.load(server, {
        clients,
        setup: () => new ModernClient(server.url),
        iteration: (client) => modernRoundTrip(client),
        teardown: (client) => client.close(),
      });
      ctx.record(`p1.v2.c${clients}`, loadFigure(`P1 ours, v2 round trips, ${clients} clients`, 'rt/s', result));
    }, { profile: `p1-v2-c${clients}` });
  }
}
