import { writeFile } from 'node:fs/promises';
import path from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { SECRET_KINDS } from '../../src/core/redaction.js';
import type { LogScanReport } from '../../src/tools/analyze-logs/scan.js';
import { analyzeLogsTool } from '../../src/tools/analyze-logs/tool.js';
import type { AuditReport } from '../../src/tools/audit-repository/scan.js';
import { auditRepositoryTool } from '../../src/tools/audit-repository/tool.js';
import { makeContext, makeTempDir, type RecordingContext } from './helpers.js';
import { KEY_IN_FILE_NAME, PLANTED_SECRETS } from './planted-secrets.js';

/** Every planted value, and its tail: a preview keeps at most 4 characters, so the tail must never appear. */
const FORBIDDEN = [...PLANTED_SECRETS.flatMap((planted) => planted.values), KEY_IN_FILE_NAME].flatMap((value) => [value, value.slice(4)]);

/** All a client or a log could see of a call: the result (text and structured content) and the statuses. */
function everything(result: unknown, context: RecordingContext): string {
  return JSON.stringify({ result, statuses: context.statuses, progress: context.progressCalls });
}

describe('secrets in files never reach tool output', () => {
  let root: string;
  let cleanup: () => Promise<void>;
  const planted = `leaked ${KEY_IN_FILE_NAME}.log`;

  beforeEach(async () => {
    ({ dir: root, cleanup } = await makeTempDir('secret-leaks'));
    await writeFile(path.join(root, planted), `${PLANTED_SECRETS.flatMap((secret) => secret.lines).join('\n')}\n`);
    // Not gzip: listed in failedFiles under its (redacted) name.
    await writeFile(path.join(root, `broken ${KEY_IN_FILE_NAME}.log.gz`), 'not gzip\n');
  });
  afterEach(() => cleanup());

  it('analyze_logs redacts them in templates, examples, paths and text', async () => {
    const context = makeContext([root]);
    const result = await analyzeLogsTool.run(analyzeLogsTool.inputSchema.parse({ path: root, top: 1000, detail: 'full' }), context);
    const report = result.structuredContent as unknown as LogScanReport;
    // Every line was mined, so every secret had its chance to leak.
    expect(report.lines).toBe(PLANTED_SECRETS.flatMap((secret) => secret.lines).length);
    expect(report.templates.reduce((sum, template) => sum + template.lines, 0)).toBe(report.lines);
    expect(report.perFile.map((file) => file.path)).toEqual(['broken AKIA….log.gz', 'leaked AKIA….log']);
    expect(report.failedFiles.map((file) => file.path)).toEqual(['broken AKIA….log.gz']);
    const seen = everything(result, context);
    for (const value of FORBIDDEN) expect(seen).not.toContain(value);
  });

  it('audit_repository reports each kind by location without its value, and redacts paths', async () => {
    const context = makeContext([root]);
    const result = await auditRepositoryTool.run({ path: root, detail: 'full' }, context);
    const report = result.structuredContent as unknown as AuditReport;
    expect(new Set(report.secrets.map((secret) => secret.kind))).toEqual(new Set(SECRET_KINDS));
    expect(new Set(report.secrets.map((secret) => secret.path))).toEqual(new Set(['leaked AKIA….log']));
    expect(report.largestFiles.map((file) => file.path).sort()).toEqual(['broken AKIA….log.gz', 'leaked AKIA….log']);
    const lines = PLANTED_SECRETS.flatMap((secret) => secret.lines);
    for (const secret of report.secrets) expect(lines[secret.line - 1]).toBeDefined();
    const seen = everything(result, context);
    for (const value of FORBIDDEN) expect(seen).not.toContain(value);
  });
});
