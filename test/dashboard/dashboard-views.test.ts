/**
 * What the dashboard's task page says (issue 26 item 16): "Runs" counts the runs the timeline shows — a run that
 * parked for input gives its count back in the row, and the page said "Runs 0" beside "run 1" — and every page has
 * an inline icon, so browsers stop asking for /favicon.ico (a 404 outside the dashboard's paths).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

import { describe, expect, it } from 'vitest';

import type { TaskEvent } from '../../src/core/store.js';
import type { TaskRecord } from '../../src/core/task.js';
import { appShell, CONTENT_SECURITY_POLICY } from '../../src/dashboard/pages.js';
import { pageOf } from '../../src/dashboard/views.js';
import type { TaskInspection } from '../../src/service/viewer/viewer.js';
import { noOperationsYet } from '../../web/dashboard/domain-text.js';

const task = (attempt: number): TaskRecord =>
  ({
    taskId: 't-1',
    status: 'input_required',
    statusMessage: null,
    createdAt: 1,
    lastUpdatedAt: 2,
    ttlMs: null,
    pollIntervalMs: 1000,
    ownerKey: 'anonymous',
    generation: 'v2',
    protocolVersion: '2026-07-28',
    toolName: 'cleanup_logs',
    arguments: {},
    clientCapabilities: {},
    progressToken: null,
    expiresAt: null,
    seq: 1,
    attempt,
    leaseOwner: null,
    leaseExpiresAt: null,
    idempotencyKey: null,
    requestDigest: null,
  }) as TaskRecord;

const event = (seq: number, kind: TaskEvent['kind'], payload?: Record<string, unknown>): TaskEvent =>
  ({ seq, taskId: 't-1', kind, status: 'working', at: seq, ...(payload ? { payload } : {}) }) as TaskEvent;

const inspection = (attempt: number, events: TaskEvent[]): TaskInspection =>
  ({
    task: task(attempt),
    events,
    details: {},
    operations: [],
    declaresOperations: true,
    permissions: { cancel: false, answer: true },
  }) as unknown as TaskInspection;

describe('dashboard task page', () => {
  it('Runs counts the runs the timeline shows, also when the row gave a parked run back', () => {
    const viewer = { ownerKey: 'anonymous', scopes: [] };
    const parked = pageOf(inspection(0, [event(1, 'created'), event(2, 'attempt', { attempt: 1 }), event(3, 'input')]), viewer);
    expect(parked.task.attempt).toBe(1);
    expect(parked.events.find((e) => e.kind === 'attempt')?.detail).toBe('run 1');
    expect(pageOf(inspection(2, [event(1, 'attempt', { attempt: 1 })]), viewer).task.attempt).toBe(2);
    expect(pageOf(inspection(0, [event(1, 'created')]), viewer).task.attempt).toBe(0);
  });

  it('every page carries an inline icon the CSP allows, so no /favicon.ico request is made', () => {
    const icon = /<link rel="icon" href="(data:image\/svg\+xml,[^"]+)">/.exec(appShell())?.[1];
    expect(icon).toBeDefined();
    expect(CONTENT_SECURITY_POLICY).toContain("img-src 'self' data:");
  });

  it("a question's message keeps its line breaks: the form's legend and a URL question's text are pre-line", () => {
    const css = readFileSync(resolve(import.meta.dirname, '../../web/dashboard/app.css'), 'utf8');
    expect(css).toMatch(/\.question > legend, \.question-message \{ white-space: pre-line; \}/);
    expect(readFileSync(resolve(import.meta.dirname, '../../web/dashboard/app.ts'), 'utf8')).toContain(
      "h('p', { class: 'question-message' }, question.message)",
    );
  });

  it('arguments this process cannot decode show as such, not as the empty object the record carries (control: readable ones as JSON)', () => {
    const viewer = { ownerKey: 'anonymous', scopes: [] };
    const readable = inspection(1, []);
    expect(pageOf(readable, viewer).task.arguments.text).toBe('{}');
    const unreadable = { ...readable, task: { ...readable.task, unreadableArguments: 'cannot decrypt task data: key id 0a1b is not configured' } };
    // Not the reason: it is the operator's (a key id and what to do about it).
    expect(pageOf(unreadable, viewer).task.arguments.text).toBe('(cannot be read by this server)');
  });

  it('a tool that declares domain operations and waits for its confirmation says "none yet", not "declared none"', () => {
    const page = pageOf(inspection(1, []), { ownerKey: 'anonymous', scopes: [] });
    expect(page.declaresOperations).toBe(true);
    expect(noOperationsYet(page)).toBe(
      'No domain operations yet: cleanup_logs may change a system of record once its question is answered; each operation and its outcome will show here.',
    );
    expect(noOperationsYet({ ...page, task: { ...page.task, status: 'completed' } })).toMatch(/^This task performed no domain operations/);
    expect(noOperationsYet({ ...page, declaresOperations: false })).toMatch(/^This task declared no domain operations/);
  });
});

describe('the result panel (issue 26 item 15)', () => {
  const completed = (result: Record<string, unknown>): TaskInspection =>
    ({ ...inspection(1, [event(1, 'attempt', { attempt: 1 })]), details: { outcome: { kind: 'result', result } } }) as unknown as TaskInspection;

  it('gives the page the text of the result as text (its own line breaks, not escaped JSON) and the structured content apart', () => {
    const report = 'Scanned 2 files.\nErrors first:\n  ERROR 3 × disk full';
    const page = pageOf(
      completed({
        content: [
          { type: 'text', text: report },
          { type: 'text', text: 'second block' },
        ],
        structuredContent: { files: 2 },
      }),
      {
        principal: 'anonymous',
        scopes: 'all',
      } as never,
    );
    expect(page.resultText).toEqual({ text: `${report}\n\nsecond block`, truncated: false, chars: report.length + 14 });
    expect(page.resultText?.text).not.toContain('\\n');
    expect(JSON.parse(page.resultStructured?.text ?? 'null')).toEqual({ files: 2 });
    // The whole result stays available as JSON (the page collapses it).
    expect(JSON.parse(page.result?.text ?? 'null').content).toHaveLength(2);
  });

  it('a result without text or structured content has neither view, only the JSON', () => {
    const page = pageOf(completed({ content: [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }] }), { principal: 'anonymous', scopes: 'all' } as never);
    expect(page.resultText).toBeNull();
    expect(page.resultStructured).toBeNull();
    expect(page.result).not.toBeNull();
  });

  it('the page renders the text in a pre of its own and collapses the JSON (the page script, as shipped)', () => {
    const app = readFileSync(resolve(import.meta.dirname, '../../web/dashboard/app.ts'), 'utf8');
    expect(app).toMatch(/h\('pre', \{ class: 'result-text'/);
    expect(app).toMatch(/resultSection\(page\)/);
  });
});
