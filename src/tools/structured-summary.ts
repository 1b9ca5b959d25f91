import { z } from 'zod';

/**
 * The rule for built-in tools' `structuredContent` (issue 27 §2, docs/guides/writing-tools.md): clients such as
 * Claude Code hand the model `JSON.stringify(structuredContent)` in place of the text report, so by default it is a
 * summary — every count, the first {@link SUMMARY_LIST_ITEMS} entries of each long list and how many were left out
 * (`omitted`) — and the caller asks for everything with `detail: "full"`.
 */

/** Entries kept per long list in a summary. */
export const SUMMARY_LIST_ITEMS = 20;

/** The `detail` argument of a built-in tool with long lists. */
export function detailArgument(full: string) {
  return z
    .enum(['summary', 'full'])
    .default('summary')
    .describe(`structuredContent: "summary" (default: counts and the first ${SUMMARY_LIST_ITEMS} entries of each list) or "full" (${full}).`);
}

/** The fields a summary adds to an output schema. */
export const SUMMARY_FIELDS = {
  detail: z.enum(['summary', 'full']).optional(),
  omitted: z.record(z.string(), z.number().int()).optional(),
};

/**
 * `report` with each list named in `keys` cut to `limit` entries, `detail: "summary"` and `omitted` (entries left
 * out per list, only lists that were cut); or the report as it is with `detail: "full"`.
 */
export function summarized<T extends object>(
  report: T,
  detail: 'summary' | 'full',
  keys: ReadonlyArray<keyof T & string>,
  limit = SUMMARY_LIST_ITEMS,
): T & { detail: 'summary' | 'full'; omitted?: Record<string, number> } {
  if (detail === 'full') return { ...report, detail };
  const cut: Record<string, unknown> = { ...(report as Record<string, unknown>) };
  const omitted: Record<string, number> = {};
  for (const key of keys) {
    const list = report[key];
    if (!Array.isArray(list) || list.length <= limit) continue;
    cut[key] = list.slice(0, limit);
    omitted[key] = list.length - limit;
  }
  return { ...(cut as T), detail, ...(Object.keys(omitted).length > 0 ? { omitted } : {}) };
}
