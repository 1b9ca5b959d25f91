// The "API" side of the same-run anchor of `npm run bench:instances` (issue 25): adds a no-op job per IPC message
// through graphile-worker's own `addJob` (one `graphile_worker.add_job` call on a pool), so the cost of adding a job
// lands in a process of its own, as a create lands in our API process.
// Usage (spawned by bench/several-instances.mjs): node adder.mjs <connection string>
import { makeWorkerUtils } from 'graphile-worker';

const utils = await makeWorkerUtils({ connectionString: process.argv[2] });
await utils.migrate();
process.on('message', (message) => {
  utils.addJob('noop', { id: message.id }).then(
    () => process.send({ added: message.id }),
    (error) => process.send({ failed: message.id, error: String(error) }),
  );
});
process.on('disconnect', () => void utils.release().then(() => process.exit(0)));
process.send({ ready: true });
