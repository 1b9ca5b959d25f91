// The graphile-worker side of the same-run anchor of `npm run bench:instances` (issue 25): a runner with a no-op
// task at the concurrency our worker gets, defaults otherwise (no local queue, unbatched completion). It tells the
// parent over IPC, per job, when the task started (for add → start) and that it succeeded.
// Usage (spawned by bench/several-instances.mjs): node worker.mjs <connection string> <concurrency>
import { run } from 'graphile-worker';

const [connectionString, concurrency] = process.argv.slice(2);
const started = new Map();
const runner = await run({
  connectionString,
  concurrency: Number(concurrency),
  // Its default pool of 10 connections, although it warns that a pool smaller than the concurrency "may lead to
  // non-optimal performance": with a pool of 32 it did worse here (2026-12-06: 297–348 jobs/s against 408 with 10,
  // more statements and CPU per job), so the anchor keeps the setting that serves it best.
  noHandleSignals: true,
  taskList: {
    noop: async (payload) => {
      started.set(payload.id, Date.now());
    },
  },
});
runner.events.on('job:success', ({ job }) => {
  const id = job.payload.id;
  process.send({ id, startedAt: started.get(id) });
  started.delete(id);
});
process.on('disconnect', () => void runner.stop().then(() => process.exit(0)));
process.send({ ready: true });
