// Ratios, goals (issue 4) and the three result files: JSON (everything), a markdown table, an SVG bar chart.
// Every ratio divides two figures of the same run.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { profilesMarkdown } from './profile.mjs';

/** Which same-run figure each figure is compared with (`null` when it has no baseline). */
function baselineOf(key, high) {
  const roundTrip = /^p1\.v[12](|blocking|honouring)\.c(\d+)$/.exec(key);
  if (roundTrip) return `baseline.reference.${roundTrip[1] === '' ? 'roundTrip' : roundTrip[1]}.c${roundTrip[2]}`;
  if (/^p2\./.test(key) || key === `baseline.reference.tasksGet.c${high}` || key === `baseline.sdk24.c${high}`) return `baseline.echo.c${high}`;
  if (/^p3\./.test(key)) return 'baseline.sqlite.singleRow';
  const postgres = /^p6\.\w+\.c(\d+)$/.exec(key);
  if (postgres) return `baseline.pg.singleRow.c${postgres[1]}`;
  return null;
}

/** P5: heap growth per request below this is collection noise; one leaked object per request is ≥ ~50 B. */
const NO_GROWTH_BYTES_PER_REQUEST = 16;

/** P1 round trips (issue 9): every flow at the highest concurrency, ≥ 3× the reference and none above 1 s. */
const P1_FLOWS = [
  ['v1', 'v1 re-poll 10 ms'],
  ['v2', 'v2 re-poll 10 ms'],
  ['v1blocking', 'v1 blocking tasks/result'],
  ['v1honouring', 'v1 honouring the hint'],
  ['v2honouring', 'v2 honouring the hint'],
];
const P1_MAX_MS = 1000;

/**
 * The goals of issues 4 and 9, each checked on one figure. `limit` is what the SVG draws next to the figure. Figures
 * that carry their own bound (`goalMs`, the hint latencies) get a goal on their p99.
 */
function goalsFor(high, figures) {
  const ratioAtLeast = (target) => (figure, ratio) => ({ pass: ratio >= target, measured: `${ratio.toFixed(2)}×` });
  const atMost = (field, target, strict) => (figure) => ({
    pass: strict ? figure[field] < target : figure[field] <= target,
    measured: `${figure[field].toFixed(2)} ${field.endsWith('Ms') ? 'ms' : figure.unit.split(' ')[0]}`,
  });
  return [
    ...P1_FLOWS.flatMap(([suffix, what]) => [
      {
        id: `P1 ${what}`,
        figure: `p1.${suffix}.c${high}`,
        target: `≥ 3× reference (same flow) round trips/s at ${high} clients`,
        check: ratioAtLeast(3),
        ratio: 3,
      },
      {
        id: `P1 ${what} max`,
        figure: `p1.${suffix}.c${high}`,
        target: `no round trip above ${P1_MAX_MS} ms`,
        check: atMost('maxMs', P1_MAX_MS, false),
        limit: { field: 'maxMs', value: P1_MAX_MS },
      },
    ]),
    ...Object.entries(figures)
      .filter(([, figure]) => figure.goalMs != null)
      .map(([key, figure]) => ({
        id: `Hint ${key.replace(/^hint\./, '')}`,
        figure: key,
        target: `completion → seen p99 ≤ ${figure.goalMs} ms`,
        check: atMost('p99Ms', figure.goalMs, false),
        limit: { field: 'p99Ms', value: figure.goalMs },
      })),
    { id: 'P2 v2', figure: `p2.v2.c${high}`, target: '≥ 0.6× echo req/s', check: ratioAtLeast(0.6), ratio: 0.6 },
    { id: 'P2 v1', figure: `p2.v1.c${high}`, target: '≥ 0.6× echo req/s', check: ratioAtLeast(0.6), ratio: 0.6 },
    { id: 'P3 rate', figure: `p3.store.c${high}`, target: '≥ 3× single-row commits/s', check: ratioAtLeast(3), ratio: 3 },
    { id: 'P3 p99', figure: `p3.store.c${high}`, target: 'create p99 ≤ 10 ms', check: atMost('p99Ms', 10, false), limit: { field: 'p99Ms', value: 10 } },
    { id: 'P6 rate', figure: `p6.store.c${high}`, target: '≥ 3× PostgreSQL single-row INSERT commits/s', check: ratioAtLeast(3), ratio: 3 },
    { id: 'P4 p50', figure: 'p4.pickup', target: 'p50 < 5 ms', check: atMost('p50Ms', 5, true), limit: { field: 'p50Ms', value: 5 } },
    { id: 'P4 p99', figure: 'p4.pickup', target: 'p99 < 20 ms', check: atMost('p99Ms', 20, true), limit: { field: 'p99Ms', value: 20 } },
    {
      id: 'P5 task',
      figure: 'p5.heapPerTask',
      target: '≤ 100 B heap per retained task',
      check: atMost('value', 100, false),
      limit: { field: 'value', value: 100 },
    },
    ...['v2', 'v1'].map((generation) => ({
      id: `P5 req ${generation}`,
      figure: `p5.heapPerRequest.${generation}`,
      target: `no per-request growth (< ${NO_GROWTH_BYTES_PER_REQUEST} B/request)`,
      check: atMost('value', NO_GROWTH_BYTES_PER_REQUEST, true),
      limit: { field: 'value', value: NO_GROWTH_BYTES_PER_REQUEST },
    })),
    {
      id: 'Polling errors',
      figure: 'polling.mixed',
      target: 'honouring clients see 0 errors',
      check: (figure) => ({ pass: figure.errors === 0, measured: `${figure.errors} errors` }),
    },
    {
      id: 'Polling p99',
      figure: 'polling.mixed',
      other: 'polling.honouring',
      target: 'honouring p99 ≤ 2× the run without abusive clients',
      check: (figure, _ratio, calm) => {
        const factor = figure.p99Ms / calm.p99Ms;
        return { pass: factor <= 2, measured: `${factor.toFixed(2)}× (${figure.p99Ms.toFixed(1)} vs ${calm.p99Ms.toFixed(1)} ms)` };
      },
    },
  ];
}

/** Ratios and goal verdicts for the recorded figures; a goal whose figures were not measured is `pass: null`. */
export function evaluate(figures, high) {
  const ratios = {};
  for (const key of Object.keys(figures)) {
    const base = baselineOf(key, high);
    if (base && figures[base]?.value > 0) ratios[key] = { baseline: base, ratio: figures[key].value / figures[base].value };
  }
  const goals = goalsFor(high, figures).map((goal) => {
    const figure = figures[goal.figure];
    const other = goal.other ? figures[goal.other] : undefined;
    const ratio = ratios[goal.figure]?.ratio;
    const missing =
      !figure ||
      (goal.ratio !== undefined && ratio === undefined) ||
      (goal.other && !other) ||
      figure.value == null ||
      (goal.limit && figure[goal.limit.field] == null);
    const verdict = missing ? { pass: null, measured: 'not measured' } : goal.check(figure, ratio, other);
    return {
      id: goal.id,
      figure: goal.figure,
      target: goal.target,
      ...verdict,
      ...(goal.ratio ? { ratio: goal.ratio } : {}),
      ...(goal.limit ? { limit: goal.limit } : {}),
    };
  });
  return { ratios, goals };
}

const number = (value, digits = 0) =>
  value == null || Number.isNaN(value) ? '' : value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const verdict = (pass) => (pass === null ? 'n/a' : pass ? 'PASS' : 'FAIL');

/** Short notes from a figure's extra fields. */
function notes(figure) {
  const parts = [];
  if (figure.requestsPerOp > 1.01) parts.push(`${number(figure.requestsPerOp, 2)} req/op, ${number(figure.cpuUsPerRequest)} µs CPU/req`);
  if (figure.operationsPerCommit) parts.push(`${number(figure.operationsPerCommit, 1)} creates/commit`);
  if (figure.maxMs != null) parts.push(`max latency ${number(figure.maxMs, 1)} ms`);
  if (figure.fromCallP50Ms != null) parts.push(`from the create call: p50 ${number(figure.fromCallP50Ms, 2)} / p99 ${number(figure.fromCallP99Ms, 2)} ms`);
  if (figure.rssBytesPerTask != null) {
    parts.push(
      `median of tenths; end − start ${number(figure.heapOverallBytesPerTask, 1)} B/task; RSS ${number(figure.rssBytesPerTask)} B/task; ${number(figure.tasksPerSecond)} tasks/s`,
    );
  }
  if (figure.rssBytesPerRequest != null) {
    parts.push(
      `median of tenths; end − start ${number(figure.heapOverallBytesPerRequest, 1)} B/req; RSS ${number(figure.rssBytesPerRequest, 1)} B/req; ${number(figure.requestsPerSecond)} req/s`,
    );
  }
  if (figure.abusiveRequestsPerSecond != null) {
    parts.push(
      `abusive: ${number(figure.abusiveRequestsPerSecond)} req/s, p50 ${number(figure.abusiveP50Ms, 2)} / max ${number(figure.abusiveMaxMs)} ms, pollIntervalMs seen ${number(figure.abusiveMeanPollIntervalMs)}, ${figure.abusiveErrors} errors`,
    );
  }
  if (figure.pollsPerTask != null)
    parts.push(
      `${number(figure.pollsPerTask, 2)} tasks/get per task; ${number(figure.roundTripsPerSecond, 1)} rt/s, round trip max ${number(figure.roundTripMaxMs)} ms`,
    );
  if (figure.drainMs > 100) parts.push(`last round trip of the window ended ${number(figure.drainMs)} ms after it`);
  if (figure.serverPeakRssBytes != null) parts.push(`server peak RSS ${number(figure.serverPeakRssBytes / 2 ** 20, 1)} MiB`);
  if (figure.serverLoopDelay)
    parts.push(`server event-loop delay p99 ${number(figure.serverLoopDelay.p99Ms, 1)} / max ${number(figure.serverLoopDelay.maxMs, 1)} ms`);
  if (figure.driverLoopDelay)
    parts.push(`load generator's event-loop delay p99 ${number(figure.driverLoopDelay.p99Ms, 1)} / max ${number(figure.driverLoopDelay.maxMs, 1)} ms`);
  if (figure.driftAfterBefore != null) parts.push(`second run / first ${number(figure.driftAfterBefore, 2)}`);
  if (figure.firstError) parts.push(`first error: ${figure.firstError.slice(0, 80)}`);
  return parts.join('; ').replaceAll('|', '/');
}

/** The markdown report: one row per figure (ratio, goal and verdict where the issue sets one), then the goals. */
export function markdown(result) {
  const { figures, ratios, goals, meta } = result;
  const lines = [
    `# mcp-tasks benchmark — ${meta.finishedAt}`,
    '',
    `Node ${meta.node}, ${meta.cpus} × ${meta.cpuModel}, ${meta.platform}; warm-up ${meta.warmupS} s, ${meta.durationS} s per run` +
      `${meta.quick ? ' (**--quick**: smoke-test durations, figures meaningless)' : ''}; commit ${meta.commit}. ` +
      "Ratios divide figures of this run. Rates count every operation started in the measured window and run until the last of them ended, so a stall lowers the rate and shows in max ms. Server CPU is the measured process's own `process.cpuUsage()` per operation." +
      (meta.options.profile
        ? " **--profile**: our server ran under the V8 profiler, so its figures include the profiler's overhead and its ratios understate it."
        : ''),
    '',
    '| Figure | Value | p50 ms | p99 ms | max ms | Errors | Server CPU µs/op | Ratio (to baseline) | Goal | Pass | Notes |',
    '|---|---:|---:|---:|---:|---:|---:|---|---|---|---|',
  ];
  for (const [key, figure] of Object.entries(figures)) {
    const ratio = ratios[key] ? `${number(ratios[key].ratio, 2)}× \`${ratios[key].baseline}\`` : '';
    const own = goals.filter((goal) => goal.figure === key);
    const digits = figure.value < 100 ? 2 : 0;
    lines.push(
      `| \`${key}\` ${figure.label} | ${number(figure.value, digits)} ${figure.unit} | ${number(figure.p50Ms, 2)} | ${number(figure.p99Ms, 2)} | ${number(figure.maxMs, 1)} | ${figure.errors ?? ''} | ` +
        `${number(figure.cpuUsPerOp, 1)} | ${ratio} | ${own.map((goal) => goal.target).join('; ')} | ${own.map((goal) => verdict(goal.pass)).join(' / ')} | ${notes(figure)} |`,
    );
  }
  lines.push('', '| Goal | Target | Measured | Pass |', '|---|---|---|---|');
  for (const goal of goals) lines.push(`| ${goal.id} | ${goal.target} | ${goal.measured} | ${verdict(goal.pass)} |`);
  return `${lines.join('\n')}\n${result.profiles ? profilesMarkdown(result.profiles) : ''}`;
}

const escape = (text) => String(text).replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

/** Rows for the chart: each figure against its baseline (with the goal's multiple) or against the goal's limit. */
function chartRows(result) {
  const { figures, ratios, goals } = result;
  const rows = [];
  for (const [key, { baseline, ratio }] of Object.entries(ratios)) {
    const goal = goals.find((candidate) => candidate.figure === key && candidate.ratio);
    rows.push({
      title: `${key} vs ${baseline}: ${ratio.toFixed(2)}×${goal ? ` (goal ≥ ${goal.ratio}×)` : ''}`,
      ours: figures[key].value,
      other: figures[baseline].value,
      unit: figures[key].unit,
      otherLabel: `${figures[baseline].unit} (${baseline})`,
      marker: goal ? goal.ratio * figures[baseline].value : undefined,
      pass: goal?.pass,
    });
  }
  for (const goal of goals.filter((candidate) => candidate.limit && figures[candidate.figure])) {
    const value = figures[goal.figure][goal.limit.field];
    if (value == null) continue;
    const unit = goal.limit.field.endsWith('Ms') ? 'ms' : figures[goal.figure].unit;
    const title = `${goal.figure}${goal.limit.field === 'value' ? '' : ` ${goal.limit.field}`} vs limit: ${goal.target}`;
    rows.push({ title, ours: value, other: goal.limit.value, unit, otherLabel: `${unit} (limit)`, pass: goal.pass });
  }
  return rows;
}

/** A hand-written SVG bar chart, one row per comparison (see the legend it draws). */
export function svg(result) {
  const rows = chartRows(result);
  const width = 1120;
  const left = 20;
  const barWidth = 700;
  const rowHeight = 58;
  const top = 60;
  const height = top + rows.length * rowHeight + 20;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${left}" y="22" font-size="15" font-weight="bold">${escape(`mcp-tasks benchmark ${result.meta.finishedAt}${result.meta.quick ? ' (quick: not meaningful)' : ''}`)}</text>`,
    `<text x="${left}" y="42" fill="#555">${escape('upper bar: ours (green: goal met, red: missed, blue: no goal); lower bar: same-run baseline or limit (grey); dashed: goal')}</text>`,
  ];
  rows.forEach((row, index) => {
    const y = top + index * rowHeight;
    const scale = barWidth / Math.max(row.ours, row.other, row.marker ?? 0, Number.MIN_VALUE);
    const colour = row.pass === true ? '#2e7d32' : row.pass === false ? '#c62828' : '#1565c0';
    const bar = (value, dy, fill, text) => {
      const length = Math.max(1, value * scale);
      return [
        `<rect x="${left}" y="${y + dy}" width="${length.toFixed(1)}" height="14" fill="${fill}"/>`,
        `<text x="${(left + length + 6).toFixed(1)}" y="${y + dy + 11}">${escape(`${number(value, value < 100 ? 2 : 0)} ${text}`)}</text>`,
      ];
    };
    parts.push(
      `<text x="${left}" y="${y + 12}">${escape(row.title)}</text>`,
      ...bar(row.ours, 17, colour, row.unit),
      ...bar(row.other, 34, '#9e9e9e', row.otherLabel),
    );
    if (row.marker !== undefined) {
      const x = (left + row.marker * scale).toFixed(1);
      parts.push(`<line x1="${x}" y1="${y + 14}" x2="${x}" y2="${y + 50}" stroke="black" stroke-dasharray="3,2"/>`);
    }
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

/** Write `<out>/<stamp>.{json,md,svg}` and `<out>/latest.{json,md,svg}`; returns the paths written. */
export function writeResults(out, result) {
  mkdirSync(out, { recursive: true });
  const stamp = result.meta.finishedAt.replaceAll(':', '-').replace(/\.\d+Z$/, 'Z');
  const files = { json: `${JSON.stringify(result, null, 2)}\n`, md: markdown(result), svg: svg(result) };
  const written = [];
  for (const [extension, content] of Object.entries(files)) {
    for (const name of [`bench-${stamp}.${extension}`, `latest.${extension}`]) {
      writeFileSync(join(out, name), content);
      written.push(join(out, name));
    }
  }
  return written;
}
