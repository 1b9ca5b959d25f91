// P6: durable creates at the TaskStore port on PostgreSQL, N concurrent creators in a closed loop, in this process
// (no HTTP): what the store's group commit and multi-row INSERTs make of the server's commit rate.
// Run by the driver: node --expose-gc bench/inproc/pg-store-creates.mjs '{"url", "clients", "warmupMs", "durationMs", "maxBatchSize"?}'
import { openPostgresTaskStore } from 'mcp-tasks/postgres';

import { measureCreates } from '../lib/tasks.mjs';

const options = JSON.parse(process.argv[2]);
const store = await openPostgresTaskStore({
  url: options.url,
  poolSize: 8,
  ...(options.maxBatchSize ? { maxBatchSize: options.maxBatchSize, maxInFlightBatches: options.clients } : {}),
});
process.stdout.write(`${JSON.stringify(await measureCreates(store, options))}\n`);
