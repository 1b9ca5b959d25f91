// Command-line options of `npm run bench`.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';

export const SUITES = ['p3', 'p4', 'p5', 'p1', 'hint', 'p2', 'polling', 'p6'];

export const USAGE = `usage: npm run bench -- [options]

  --quick               smoke-test sizes (runs of 0.3 s, few tasks and clients); the figures mean nothing
  --duration <s>        measured seconds per run (default 8)
  --warmup <s>          warm-up seconds before each run, discarded (default 2; 0 counts the first round trips)
  --concurrency <list>  client counts for P1, comma separated (default 8,32); the highest is used by P2, P3,
                        P5 and the abusive pollers, the lowest by P4
  --only <list>         suites to run, comma separated: ${SUITES.join(', ')}
                        (each suite measures the baselines its ratios need)
  --poll-clients <n>    clients honouring pollIntervalMs in the polling run (default 1000)
  --poll-interval-ms <ms>  the server's pollIntervalMs in the polling run (default 1000)
  --tasks <n>           tasks created for P5 heap per task (default 100000)
  --requests <n>        tasks/get for P5 heap per request (default 50000)
  --profile             write V8 CPU profiles of our server (P1, P2, P3 HTTP) and summarise them
  --out <dir>           where results go (default bench/results)
  --help`;

const FULL = { duration: 8, warmup: 2, pollClients: 1000, pollIntervalMs: 1000, tasks: 100_000, requests: 50_000 };
const QUICK = { duration: 0.3, warmup: 0, pollClients: 50, pollIntervalMs: 100, tasks: 1000, requests: 500 };

function positive(name, text, { zero = false } = {}) {
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0 || (value === 0 && !zero))
    throw new Error(`--${name} expects a ${zero ? 'non-negative' : 'positive'} number, got ${text}`);
  return value;
}

/** Parse argv; throws with a message for bad values. */
export function parseOptions(argv, defaultOut) {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      concurrency: { type: 'string', default: '8,32' },
      only: { type: 'string' },
      'poll-clients': { type: 'string' },
      'poll-interval-ms': { type: 'string' },
      tasks: { type: 'string' },
      requests: { type: 'string' },
      profile: { type: 'boolean', default: false },
      out: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  const preset = values.quick ? QUICK : FULL;
  const pick = (name, key) => (values[name] === undefined ? preset[key] : positive(name, values[name], { zero: name === 'warmup' }));
  const concurrency = values.concurrency.split(',').map((part) => Math.round(positive('concurrency', part)));
  const only = values.only ? values.only.split(',').map((name) => name.trim()) : SUITES;
  const unknown = only.filter((name) => !SUITES.includes(name));
  if (unknown.length > 0) throw new Error(`--only: unknown suite ${unknown.join(', ')} (suites: ${SUITES.join(', ')})`);
  return {
    help: values.help,
    quick: values.quick,
    durationMs: pick('duration', 'duration') * 1000,
    warmupMs: pick('warmup', 'warmup') * 1000,
    concurrency,
    suites: SUITES.filter((name) => only.includes(name)),
    pollClients: Math.round(pick('poll-clients', 'pollClients')),
    pollIntervalMs: Math.round(pick('poll-interval-ms', 'pollIntervalMs')),
    tasks: Math.round(pick('tasks', 'tasks')),
    requests: Math.round(pick('requests', 'requests')),
    profile: values.profile,
    out: resolve(values.out ?? defaultOut),
  };
}
