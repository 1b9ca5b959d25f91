import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  type ChartConfiguration,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
} from 'chart.js';

import { getOverview, getUpstreams, type Overview, type TaskStatus, type Upstreams } from './api.js';
import { formatDuration, h, replace } from './dom.js';

/**
 * `/dashboard/overview`: counts by status and tool, and per five-minute bucket queue wait and run time of the last
 * hour's tasks the viewer sees, drawn with Chart.js (bundled; it styles canvases through the CSSOM only, which the
 * strict CSP allows). Every chart has a data table beside it, so nothing is only in a picture.
 */

Chart.register(BarController, BarElement, CategoryScale, LinearScale, LineController, LineElement, PointElement, Legend, Tooltip);

const STATUS_COLOURS: Record<TaskStatus, string> = {
  working: '#0969da',
  input_required: '#9a6700',
  completed: '#1a7f37',
  failed: '#cf222e',
  cancelled: '#57606a',
};

function clock(ms: number): string {
  const date = new Date(ms);
  return `${String(date.getHours()).padStart(2, '0')}:${String(date.getMinutes()).padStart(2, '0')}`;
}

function seconds(ms: number | null): number | null {
  return ms === null ? null : Math.round(ms / 100) / 10;
}

/** A canvas for one chart, described for screen readers, with its figures as a table below. */
function chartBlock(id: string, title: string, description: string, table: HTMLTableElement): { section: HTMLElement; canvas: HTMLCanvasElement } {
  const canvas = h('canvas', { id, role: 'img', 'aria-label': `${title}: ${description}` });
  const section = h(
    'section',
    { class: 'chart', 'aria-labelledby': `${id}-h` },
    h('h2', { id: `${id}-h` }, title),
    h('div', { class: 'chart-box' }, canvas),
    h('details', {}, h('summary', {}, `${title} as a table`), table),
  );
  return { section, canvas };
}

function table(caption: string, heads: string[], rows: Array<Array<string | number>>): HTMLTableElement {
  return h(
    'table',
    { class: 'tasks' },
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, ...heads.map((head) => h('th', { scope: 'col' }, head)))),
    h('tbody', {}, ...rows.map((row) => h('tr', {}, ...row.map((cell) => h('td', {}, String(cell)))))),
  );
}

/** A drawn chart, for destroying before a redraw. */
interface Drawn {
  destroy(): void;
}

function draw(canvas: HTMLCanvasElement, config: ChartConfiguration): Drawn {
  // No animation: a chart that is redrawn on every live update should not keep moving.
  return new Chart(canvas, { ...config, options: { animation: false, responsive: true, maintainAspectRatio: false, ...config.options } } as ChartConfiguration);
}

/** How this process's upstream MCP servers stand (issue 28), or nothing when it has none. */
function upstreamSection(upstreams: Upstreams['upstreams']): HTMLElement[] {
  if (upstreams.length === 0) return [];
  const rows = upstreams.map((upstream) => [
    upstream.name,
    upstream.transport,
    upstream.state + (upstream.retryInMs === undefined ? '' : ` (retry in ${formatDuration(upstream.retryInMs)})`),
    upstream.tools,
    upstream.inFlight,
    `${upstream.restarts} / ${upstream.failedRestarts}`,
    upstream.error ?? '–',
  ]);
  return [
    h('h2', {}, 'Upstream servers'),
    h(
      'p',
      { class: 'small' },
      'The MCP servers this process forwards calls to (serve --upstream), as its /readyz shows them; each worker process has its own connections.',
    ),
    table('Upstream servers of this process', ['Upstream', 'Transport', 'State', 'Tools', 'Calls in flight', 'Restarts / failed', 'Last error'], rows),
  ];
}

function render(main: HTMLElement, overview: Overview, charts: Drawn[], upstreams: Upstreams['upstreams'] = []): void {
  for (const chart of charts.splice(0)) chart.destroy();
  const statuses = Object.keys(overview.byStatus) as TaskStatus[];
  const labels = overview.buckets.map((bucket) => clock(bucket.from));
  const status = chartBlock(
    'chart-status',
    'Tasks by status',
    `${statuses.map((name) => `${overview.byStatus[name]} ${name.replace('_', ' ')}`).join(', ')}`,
    table(
      'Tasks by status',
      ['Status', 'Tasks'],
      statuses.map((name) => [name.replace('_', ' '), overview.byStatus[name]]),
    ),
  );
  const tools = chartBlock(
    'chart-tool',
    'Tasks by tool',
    overview.byTool.map((row) => `${row.count} ${row.tool}`).join(', ') || 'none',
    table(
      'Tasks by tool',
      ['Tool', 'Tasks'],
      overview.byTool.map((row) => [row.tool, row.count]),
    ),
  );
  const rows = overview.buckets.map((bucket) => [
    clock(bucket.from),
    bucket.created,
    bucket.queueWaitMedianMs === null ? '–' : formatDuration(bucket.queueWaitMedianMs),
    bucket.queueWaitMaxMs === null ? '–' : formatDuration(bucket.queueWaitMaxMs),
    bucket.runTimeMedianMs === null ? '–' : formatDuration(bucket.runTimeMedianMs),
    bucket.runTimeMaxMs === null ? '–' : formatDuration(bucket.runTimeMaxMs),
  ]);
  const timing = chartBlock(
    'chart-timing',
    'Queue wait and run time',
    'median and maximum seconds per five minutes of the last hour',
    table('Queue wait and run time per five minutes', ['From', 'Created', 'Queue wait median', 'Queue wait max', 'Run time median', 'Run time max'], rows),
  );
  replace(
    main,
    h('h1', {}, 'Overview'),
    h(
      'p',
      { id: 'overview-total', class: 'small' },
      `${overview.total} task${overview.total === 1 ? '' : 's'} created since ${clock(overview.from)}${overview.sampled ? ' (the newest ones; more exist)' : ''}, in buckets of five whole minutes. Queue wait: created → first run started; run time: first run → ended.`,
    ),
    h('div', { class: 'charts' }, status.section, tools.section),
    timing.section,
    ...upstreamSection(upstreams),
  );
  document.title = 'Overview · mcp-tasks';
  charts.push(
    draw(status.canvas, {
      type: 'bar',
      data: {
        labels: statuses.map((name) => name.replace('_', ' ')),
        datasets: [{ label: 'tasks', data: statuses.map((name) => overview.byStatus[name]), backgroundColor: statuses.map((name) => STATUS_COLOURS[name]) }],
      },
      options: { plugins: { legend: { display: false } }, scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } },
    }),
    draw(tools.canvas, {
      type: 'bar',
      data: {
        labels: overview.byTool.map((row) => row.tool),
        datasets: [{ label: 'tasks', data: overview.byTool.map((row) => row.count), backgroundColor: '#0b57d0' }],
      },
      options: { indexAxis: 'y', plugins: { legend: { display: false } }, scales: { x: { beginAtZero: true, ticks: { precision: 0 } } } },
    }),
    draw(timing.canvas, {
      type: 'line',
      data: {
        labels,
        datasets: [
          {
            label: 'queue wait median (s)',
            data: overview.buckets.map((b) => seconds(b.queueWaitMedianMs)),
            borderColor: '#0969da',
            backgroundColor: '#0969da',
            spanGaps: true,
          },
          {
            label: 'queue wait max (s)',
            data: overview.buckets.map((b) => seconds(b.queueWaitMaxMs)),
            borderColor: '#0969da',
            backgroundColor: '#0969da',
            borderDash: [6, 4],
            spanGaps: true,
          },
          {
            label: 'run time median (s)',
            data: overview.buckets.map((b) => seconds(b.runTimeMedianMs)),
            borderColor: '#bc4c00',
            backgroundColor: '#bc4c00',
            spanGaps: true,
          },
          {
            label: 'run time max (s)',
            data: overview.buckets.map((b) => seconds(b.runTimeMaxMs)),
            borderColor: '#bc4c00',
            backgroundColor: '#bc4c00',
            borderDash: [6, 4],
            spanGaps: true,
          },
        ],
      },
      options: { scales: { y: { beginAtZero: true, title: { display: true, text: 'seconds' } } } },
    }),
  );
}

/** Show the overview; returns the refresh the live feed calls (debounced by the caller). */
export async function showOverview(main: HTMLElement): Promise<() => void> {
  const charts: Drawn[] = [];
  const load = async (): Promise<void> => {
    const [overview, { upstreams }] = await Promise.all([getOverview(), getUpstreams()]);
    render(main, overview, charts, upstreams);
  };
  await load();
  return () => void load();
}
