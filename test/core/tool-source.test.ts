import { writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { loadToolSources, toolSourceOf } from '../../src/core/tool-source.js';
import { BUILTIN_TOOL_SOURCE, CONFORMANCE_FIXTURE_SOURCE } from '../../src/tools/sources.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const OPTIONS = { roots: ['/var/log'], writableRoots: [] as string[], deniedPaths: ['/srv/data'] };

/**
 * Tools are loadable by module specifier (a prerequisite of worker threads): every process builds the same tool
 * list from the same JSON sources and settings — built-ins, the conformance fixtures and `--tools` modules alike.
 */
describe('tool sources', () => {
  const temps: Array<ReturnType<typeof makeTempDir>> = [];
  afterEach(() => {
    for (const temp of temps.splice(0)) temp.remove();
  });

  it('the built-in source gives the built-in tools, plus cleanup_logs and publish_report only with a writable root; the sources are plain JSON', async () => {
    expect((await loadToolSources([BUILTIN_TOOL_SOURCE], OPTIONS)).map((tool) => tool.name)).toEqual([
      'analyze_logs',
      'audit_repository',
      'check_infrastructure',
    ]);
    const writable = await loadToolSources([BUILTIN_TOOL_SOURCE], { ...OPTIONS, writableRoots: ['/tmp'] });
    expect(writable.map((tool) => tool.name)).toEqual(['analyze_logs', 'audit_repository', 'check_infrastructure', 'cleanup_logs', 'publish_report']);
    for (const source of [BUILTIN_TOOL_SOURCE, CONFORMANCE_FIXTURE_SOURCE]) expect(JSON.parse(JSON.stringify(source))).toEqual(source);
  });

  it('a named export and a --tools module given by relative path (a default export function of the settings) load in order', async () => {
    const temp = makeTempDir();
    temps.push(temp);
    const file = join(temp.dir, 'tools.mjs');
    writeFileSync(file, `export default (options) => [{ name: 'echo_settings', description: JSON.stringify(options), run: async () => ({ content: [] }) }];\n`);
    const tools = await loadToolSources([CONFORMANCE_FIXTURE_SOURCE, toolSourceOf(`./${relative(process.cwd(), file)}`)], OPTIONS);
    expect(tools.map((tool) => tool.name)).toContain('slow_compute');
    const echo = tools.at(-1)!;
    expect(echo.name).toBe('echo_settings');
    expect(JSON.parse(echo.description)).toEqual({ ...OPTIONS, sourceOptions: {} });
    expect(toolSourceOf('some-package/tools')).toEqual({ module: 'some-package/tools' });
  });

  it('a module that exports no tools is refused with -32602 naming it', async () => {
    const temp = makeTempDir();
    temps.push(temp);
    const file = join(temp.dir, 'empty.mjs');
    writeFileSync(file, 'export const nothing = 1;\n');
    await expect(loadToolSources([toolSourceOf(file)], OPTIONS)).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('empty.mjs: expected an array of tools'),
    });
  });
});
