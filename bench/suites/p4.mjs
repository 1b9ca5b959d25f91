// P4: pick-up latency (create committed → tool running), through the real runtime in-process.
export async function p4(ctx) {
  const clients = ctx.concurrencyLow;
  const result = await ctx.measure('pickup', { clients, warmupMs: ctx.options.warmupMs, durationMs: ctx.options.durationMs });
  const { fromCommit, fromCall } = result.samples;
  ctx.record('p4.pickup', {
    label: `P4 pick-up latency, create committed → tool running, ${clients} creators (in-process)`,
    unit: 'ms (p50)',
    value: fromCommit.p50Ms,
    p50Ms: fromCommit.p50Ms,
    p99Ms: fromCommit.p99Ms,
    maxMs: fromCommit.maxMs,
    fromCallP50Ms: fromCall.p50Ms,
    fromCallP99Ms: fromCall.p99Ms,
    tasksPerSecond: result.rate,
    errors: result.errors,
    cpuUsPerOp: result.cpuUsPerOp,
  });
}
