/**
 * Issue 27 §2: `analyze_logs`'s `structuredContent` is a summary by default, because clients such as Claude Code
 * hand the model `JSON.stringify(structuredContent)` instead of the text report (over 16 loghub files that was
 * 278,800 characters against a ~11k-character text). Read in place from ../shared/data/loghub.
 */
import { describe, expect, it } from 'vitest';

import { locateLoghub, missingDataHelp } from '../../bench/lib/loghub.mjs';
import { type LogScanReport, SUMMARY_ITEMS } from '../../src/tools/analyze-logs/report.js';
import { analyzeLogsTool } from '../../src/tools/analyze-logs/tool.js';
import { makeContext } from './helpers.js';

const located = locateLoghub();

async function analyze(detail?: 'summary' | 'full') {
  if (!located.dir) throw new Error(missingDataHelp(located.missing as string));
  const dir = located.dir as string;
  const result = await analyzeLogsTool.run(analyzeLogsTool.inputSchema.parse({ path: dir, ...(detail ? { detail } : {}) }), makeContext([dir]));
  analyzeLogsTool.outputSchema?.parse(result.structuredContent);
  return { structured: result.structuredContent as Record<string, unknown>, text: (result.content[0] as { text: string }).text };
}

describe('analyze_logs structuredContent (issue 27 §2)', () => {
  it('over the 16 loghub files the default structuredContent is a summary well under 20,000 characters; the text report is the same as with detail "full"', async () => {
    const summary = await analyze();
    const full = await analyze('full');
    const fullReport = full.structured as unknown as LogScanReport;
    expect(fullReport.files).toBe(16);
    // Before issue 27 the default structuredContent was the full report (~280k characters here).
    expect(JSON.stringify(full.structured).length).toBeGreaterThan(100_000);
    expect(JSON.stringify(summary.structured).length).toBeLessThan(20_000);
    expect(summary.text).toBe(full.text);
    // Every count a program needs is there, the long lists cut, the hourly counts left to "full".
    expect(summary.structured).toMatchObject({
      detail: 'summary',
      files: fullReport.files,
      lines: fullReport.lines,
      events: fullReport.events,
      severities: fullReport.severities,
      templateCount: fullReport.templateCount,
      attentionCount: fullReport.attentionCount,
      timeRange: fullReport.timeRange,
      formats: fullReport.formats,
      trends: { newCount: fullReport.trends.newCount, spikingCount: fullReport.trends.spikingCount },
    });
    expect(summary.structured).not.toHaveProperty('perHour');
    expect(summary.structured.attention).toEqual(fullReport.attention.slice(0, SUMMARY_ITEMS));
    expect(summary.structured.templates).toEqual(fullReport.templates.slice(0, SUMMARY_ITEMS));
    expect(full.structured).toMatchObject({ detail: 'full' });
    expect(Object.keys(fullReport.perHour).length).toBeGreaterThan(100);
  });
});
