// Baseline of P6: bare single-row INSERT commits on the same PostgreSQL server, N connections in a closed loop, each
// INSERT its own (autocommit) transaction with synchronous_commit on: the server's own commit rate, already helped
// by its WAL group flush across concurrent backends. Same row size as the SQLite baseline.
// Run by the driver: node bench/inproc/pg-baseline.mjs '{"url", "clients", "warmupMs", "durationMs"}'
import { randomBytes } from 'node:crypto';

import pg from 'pg';

import { closedLoop, thisProcess } from '../lib/load.mjs';

const options = JSON.parse(process.argv[2]);
const setupClient = new pg.Client({ connectionString: options.url });
await setupClient.connect();
await setupClient.query('CREATE TABLE IF NOT EXISTS baseline_rows (id text PRIMARY KEY, owner text NOT NULL, body text NOT NULL, created_at bigint NOT NULL)');
await setupClient.end();
const body = JSON.stringify({ tool: 'noop', arguments: {}, clientCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } }, pad: 'x'.repeat(200) });

const result = await closedLoop({
  clients: options.clients,
  setup: async () => {
    const client = new pg.Client({ connectionString: options.url });
    await client.connect();
    return client;
  },
  iteration: async (client) => {
    await client.query('INSERT INTO baseline_rows (id, owner, body, created_at) VALUES ($1, $2, $3, $4)', [
      randomBytes(16).toString('base64url'),
      'anonymous',
      body,
      Date.now(),
    ]);
  },
  teardown: (client) => client.end(),
  warmupMs: options.warmupMs,
  durationMs: options.durationMs,
  server: thisProcess,
});
process.stdout.write(`${JSON.stringify(result)}\n`);
