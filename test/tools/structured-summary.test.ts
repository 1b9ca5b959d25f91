import { describe, expect, it } from 'vitest';

import { summarized, SUMMARY_LIST_ITEMS } from '../../src/tools/structured-summary.js';

describe('summary structuredContent of the built-in tools (issue 27 §2)', () => {
  const report = { path: '/r', files: 30, secrets: Array.from({ length: 30 }, (_, i) => ({ line: i })), languages: [{ language: 'ts' }] };

  it('cuts each named long list to the first entries and says how many were left out; counts stay', () => {
    const summary = summarized(report, 'summary', ['secrets', 'languages']);
    expect(summary.secrets).toEqual(report.secrets.slice(0, SUMMARY_LIST_ITEMS));
    expect(summary.languages).toEqual(report.languages);
    expect(summary).toMatchObject({ path: '/r', files: 30, detail: 'summary', omitted: { secrets: 30 - SUMMARY_LIST_ITEMS } });
    expect(summary.omitted).not.toHaveProperty('languages');
  });

  it('detail "full" keeps everything (negative control)', () => {
    expect(summarized(report, 'full', ['secrets'])).toEqual({ ...report, detail: 'full' });
    expect(summarized({ items: [1, 2] }, 'summary', ['items'])).toEqual({ items: [1, 2], detail: 'summary' });
  });
});
