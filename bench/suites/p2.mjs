// P2: `tasks/get` of a completed task, bracketed by two runs of the bare echo (the baseline is their mean, and the
// drift between them is reported), with the base SDK 2.4 and the SDK 1.32.2 reference measured in the same block.
import { loadFigure } from '../lib/context.mjs';
import { completedLegacyTask, completedModernTask } from '../lib/flows.mjs';
import { LegacySession, ModernClient, RawPoster, RpcError } from '../lib/mcp.mjs';

/** Echo clients replay the exact bytes of our v2 `tasks/get` (same body size and headers). */
async function echoRun(ctx, clients) {
  const { headers, message } = new ModernClient('http://127.0.0.1/mcp').request('tasks/get', { taskId: 'x'.repeat(22) });
  const body = JSON.stringify(message);
  return ctx.withServer(ctx.baseline('echo'), (server) =>
    ctx.load(server, {
      clients,
      setup: () => new RawPoster(server.url),
      iteration: async (poster) => {
        if (JSON.parse((await poster.post(headers, body)).body).result === undefined) throw new RpcError('echo answered no result');
      },
      teardown: (poster) => poster.close(),
    }),
  );
}

/** `tasks/get` of one completed task per client; `open` makes the client, `complete` its task. */
function taskGetLoop(clients, open, complete) {
  return {
    clients,
    setup: async () => {
      const client = await open();
      return { client, taskId: await complete(client) };
    },
    iteration: async ({ client, taskId }) => {
      if ((await client.call('tasks/get', { taskId })).status !== 'completed') throw new RpcError('task not completed');
    },
    teardown: ({ client }) => client.close(),
  };
}

export async function p2(ctx) {
  const clients = ctx.concurrencyHigh;
  const first = await echoRun(ctx, clients);

  await ctx.withServer(
    ctx.ours(),
    async (server) => {
      const result = await ctx.load(
        server,
        taskGetLoop(clients, () => new ModernClient(server.url), completedModernTask),
      );
      ctx.record(`p2.v2.c${clients}`, loadFigure(`P2 ours, v2 tasks/get (completed), ${clients} clients`, 'req/s', result));
    },
    { profile: `p2-v2-c${clients}` },
  );
  await ctx.withServer(
    ctx.ours(),
    async (server) => {
      const result = await ctx.load(
        server,
        taskGetLoop(clients, () => new LegacySession(server.url).open(), completedLegacyTask),
      );
      ctx.record(`p2.v1.c${clients}`, loadFigure(`P2 ours, v1 tasks/get (completed), ${clients} clients`, 'req/s', result));
    },
    { profile: `p2-v1-c${clients}` },
  );
  await ctx.withServer(ctx.baseline('reference-sdk132'), async (server) => {
    const result = await ctx.load(
      server,
      taskGetLoop(clients, () => new LegacySession(server.url).open(), completedLegacyTask),
    );
    ctx.record(`baseline.reference.tasksGet.c${clients}`, loadFigure(`SDK 1.32.2 reference, tasks/get (completed), ${clients} clients`, 'req/s', result));
  });
  await ctx.withServer(ctx.baseline('sdk24-noop'), async (server) => {
    const result = await ctx.load(server, {
      clients,
      setup: () => new ModernClient(server.url, {}),
      iteration: async (client) => {
        if (!Array.isArray((await client.call('tools/call', { name: 'noop', arguments: {} })).content)) throw new RpcError('no tool result');
      },
      teardown: (client) => client.close(),
    });
    ctx.record(`baseline.sdk24.c${clients}`, loadFigure(`SDK 2.4 createMcpHandler, tools/call noop, ${clients} clients`, 'req/s', result));
  });

  const second = await echoRun(ctx, clients);
  const mean = (field) => (first[field] + second[field]) / 2;
  ctx.record(
    `baseline.echo.c${clients}`,
    loadFigure(
      `bare node:http JSON-RPC echo, ${clients} connections (mean of the runs before and after P2)`,
      'req/s',
      {
        ...first,
        rate: mean('rate'),
        p50Ms: mean('p50Ms'),
        p99Ms: mean('p99Ms'),
        maxMs: Math.max(first.maxMs, second.maxMs),
        errors: first.errors + second.errors,
        cpuUsPerOp: mean('cpuUsPerOp'),
        cpuUsPerRequest: mean('cpuUsPerRequest'),
      },
      { driftAfterBefore: second.rate / first.rate },
    ),
  );
}
