import type { TaskPage } from './api.js';
import { badge, type Child, formatTime, h } from './dom.js';

/**
 * A task page's timeline (issue 26 item 16): its events oldest first, with each run of consecutive `message` events
 * — a tool's progress, one per statusMessage write, ~50 for a long scan — folded into one row that shows the latest
 * and how many there were, and opens to all of them.
 */

export type TimelineEvent = TaskPage['events'][number];

/** One row of the timeline: an event, or a run of two or more consecutive `message` events. */
export type TimelineRow = { kind: 'event'; event: TimelineEvent } | { kind: 'messages'; events: TimelineEvent[] };

/** The rows of `events` (oldest first): consecutive `message` events folded, every other event as it is. */
export function foldMessages(events: readonly TimelineEvent[]): TimelineRow[] {
  const rows: TimelineRow[] = [];
  for (const event of events) {
    const last = rows.at(-1);
    if (event.kind !== 'message') rows.push({ kind: 'event', event });
    else if (last?.kind === 'messages') last.events.push(event);
    else if (last?.kind === 'event' && last.event.kind === 'message') rows[rows.length - 1] = { kind: 'messages', events: [last.event, event] };
    else rows.push({ kind: 'event', event });
  }
  return rows;
}

function entry(event: TimelineEvent): Child[] {
  return [
    h('time', {}, formatTime(event.at)),
    ' ',
    h('strong', {}, event.kind),
    ' ',
    badge(event.status),
    event.detail ? h('span', { class: 'detail' }, ` ${event.detail}`) : null,
  ];
}

function row(folded: TimelineRow): HTMLLIElement {
  if (folded.kind === 'event') return h('li', {}, ...entry(folded.event));
  const { events } = folded;
  const latest = events.at(-1) as TimelineEvent;
  const first = events[0] as TimelineEvent;
  return h(
    'li',
    { class: 'messages' },
    h(
      'details',
      {},
      h('summary', {}, ...entry(latest), h('span', { class: 'small' }, ` — the latest of ${events.length} messages since ${formatTime(first.at)}`)),
      h('ol', { class: 'timeline' }, ...events.map((event) => h('li', {}, ...entry(event)))),
    ),
  );
}

/** The timeline list of a task page. */
export function timeline(events: readonly TimelineEvent[]): HTMLOListElement {
  return h('ol', { class: 'timeline' }, ...foldMessages(events).map(row));
}
