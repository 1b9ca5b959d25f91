// P3: durable creates at the TaskStore port, N concurrent creators in a closed loop, in this process (no HTTP), so
// the figure is what the store's group commit makes of the device's sync rate.
// Run by the driver: node --expose-gc bench/inproc/store-creates.mjs '{"dir", "clients", "warmupMs", "durationMs"}'
import { join } from 'node:path';

import { openSqliteTaskStore } from '../../dist/store/sqlite/index.js';
import { measureCreates } from '../lib/tasks.mjs';

const options = JSON.parse(process.argv[2]);
const store = openSqliteTaskStore({ path: join(options.dir, 'tasks.db') });
process.stdout.write(`${JSON.stringify(await measureCreates(store, options))}\n`);
