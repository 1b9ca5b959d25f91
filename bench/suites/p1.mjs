// P1: task round trips/s with `noop`, each figure with the SDK 1.32.2 reference measured right before ours with the
// same flow (same minute, same machine state) so the ratio is not skewed by drift. Three ways of waiting:
//   (a) re-polling `tasks/get` every 10 ms (what impatient clients do), v1 and v2, at every concurrency;
//   (b) v1 `tools/call` → blocking `tasks/result` (no polling policy involved), at the highest concurrency;
//   (c) honouring the server's poll hint, v1 and v2, at the highest concurrency.
// Rates count every round trip started in the window until the last of them ended (see lib/load.mjs).
import { loadFigure } from '../lib/context.mjs';
import { HONOUR_HINT, legacyBlockingRoundTrip, legacyRoundTrip, modernRoundTrip, REPOLL_10MS } from '../lib/flows.mjs';
import { LegacySession, ModernClient } from '../lib/mcp.mjs';

/** Closed loop of 2025-11-25 round trips, each client on its own session. */
function legacyLoop(url, clients, roundTrip) {
  return {
    clients,
    setup: () => new LegacySession(url).open(),
    iteration: (session) => roundTrip(session),
    teardown: (session) => session.close(),
  };
}

function modernLoop(url, clients, wait) {
  return {
    clients,
    setup: () => new ModernClient(url),
    iteration: (client) => modernRoundTrip(client, { wait }),
    teardown: (client) => client.close(),
  };
}

/** The flows, by figure suffix: what the reference runs and what we run (v1 always; v2 where it has the flow). */
const FLOWS = [
  {
    key: '',
    what: 'v1 round trips, re-polling every 10 ms',
    legacy: (session) => legacyRoundTrip(session, { wait: REPOLL_10MS }),
    modern: REPOLL_10MS,
    reference: 'roundTrip',
  },
  { key: 'blocking', what: 'v1 tools/call → blocking tasks/result', legacy: legacyBlockingRoundTrip, reference: 'blocking' },
  {
    key: 'honouring',
    what: 'round trips honouring the poll hint',
    legacy: (session) => legacyRoundTrip(session, { wait: HONOUR_HINT }),
    modern: HONOUR_HINT,
    reference: 'honouring',
  },
];

async function measureFlow(ctx, flow, clients) {
  const label = (who, generation) => `${who}, ${generation} ${flow.what.replace(/^v1 /, '')}, ${clients} clients`;
  await ctx.withServer(ctx.baseline('reference-sdk132'), async (server) => {
    const result = await ctx.load(server, legacyLoop(server.url, clients, flow.legacy));
    ctx.record(`baseline.reference.${flow.reference}.c${clients}`, loadFigure(label('SDK 1.32.2 reference', 'v1'), 'rt/s', result));
  });
  await ctx.withServer(
    ctx.ours(),
    async (server) => {
      const result = await ctx.load(server, legacyLoop(server.url, clients, flow.legacy));
      ctx.record(`p1.v1${flow.key}.c${clients}`, loadFigure(label('P1 ours', 'v1'), 'rt/s', result));
    },
    { profile: `p1-v1${flow.key}-c${clients}` },
  );
  if (!flow.modern) return;
  await ctx.withServer(
    ctx.ours(),
    async (server) => {
      const result = await ctx.load(server, modernLoop(server.url, clients, flow.modern));
      ctx.record(`p1.v2${flow.key}.c${clients}`, loadFigure(label('P1 ours', 'v2'), 'rt/s', result));
    },
    { profile: `p1-v2${flow.key}-c${clients}` },
  );
}

export async function p1(ctx) {
  const [repoll, ...others] = FLOWS;
  for (const clients of ctx.options.concurrency) await measureFlow(ctx, repoll, clients);
  for (const flow of others) await measureFlow(ctx, flow, ctx.concurrencyHigh);
}
