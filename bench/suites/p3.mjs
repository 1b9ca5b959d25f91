// P3: durable creates. The bare SQLite baseline runs first (same disk, same minute), then creates at the TaskStore
// port in-process (the goal), then creates over HTTP (reported, no goal).
import { loadFigure } from '../lib/context.mjs';
import { ModernClient, RpcError } from '../lib/mcp.mjs';

export async function p3(ctx) {
  const clients = ctx.concurrencyHigh;
  const timing = { warmupMs: ctx.options.warmupMs, durationMs: ctx.options.durationMs };
  const sqlite = await ctx.measure('sqlite-baseline', { ...timing, batch: 100 });
  const { singleRow, batched } = sqlite;
  ctx.record('baseline.sqlite.singleRow', {
    label: 'SQLite WAL + synchronous=FULL, one row per commit',
    unit: 'commits/s',
    value: singleRow.commitsPerSecond,
    p50Ms: singleRow.p50Ms,
    p99Ms: singleRow.p99Ms,
    maxMs: singleRow.maxMs,
    cpuUsPerOp: singleRow.cpuUsPerRow,
  });
  ctx.record('baseline.sqlite.batch100', {
    label: 'SQLite WAL + synchronous=FULL, 100 rows per commit',
    unit: 'rows/s',
    value: batched.rowsPerSecond,
    p50Ms: batched.p50Ms,
    p99Ms: batched.p99Ms,
    maxMs: batched.maxMs,
    cpuUsPerOp: batched.cpuUsPerRow,
  });

  const store = await ctx.measure('store-creates', { ...timing, clients });
  ctx.record(
    `p3.store.c${clients}`,
    loadFigure(`P3 durable creates at the TaskStore port, ${clients} creators (in-process)`, 'creates/s', store, {
      operationsPerCommit: store.operationsPerCommit,
    }),
  );

  await ctx.withServer(
    ctx.ours(),
    async (server) => {
      const result = await ctx.load(server, {
        clients,
        setup: () => new ModernClient(server.url),
        iteration: async (client) => {
          if ((await client.call('tools/call', { name: 'noop', arguments: {} })).resultType !== 'task') throw new RpcError('no task created');
        },
        teardown: (client) => client.close(),
      });
      ctx.record(`p3.http.c${clients}`, loadFigure(`P3 ours, v2 tools/call creating a noop task over HTTP, ${clients} clients`, 'creates/s', result));
    },
    { profile: `p3-http-c${clients}` },
  );
}
