import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ensureBuilt } from '../cli/support.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { anchorsOf, checkLinks, type CommandFlags, commandLineProblems, docsFiles, githubSlug, linksOf, missingPaths, unmentioned } from './docs-check.js';

/**
 * The docs stay true to the code (issue 24 item 1): every relative link and anchor resolves, the README stays a
 * doorway, the generated reference is current, every CLI command, option and configuration key is documented,
 * command lines in the docs use options their command has, and the files they name exist. The CLI is enumerated
 * from the commander program of src/cli/main.ts (through its build), never from a hand list.
 */

const ROOT = resolve(import.meta.dirname, '../..');

interface ReferenceScript {
  loadProgram(mainModule: string): Promise<Command>;
  listCommands(program: Command): { path: string[]; options: { long: string | undefined; short: string | undefined }[] }[];
  renderReference(root: string): Promise<Record<string, string>>;
}

let reference: ReferenceScript;
let commands: CommandFlags[];

const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');
/** The docs written by hand: everything but the generated reference and the decision records (history). */
const handWritten = (): string[] => docsFiles(ROOT).filter((file) => !file.startsWith('docs/reference/') && !file.startsWith('docs/adr/'));

beforeAll(async () => {
  ensureBuilt();
  reference = (await import(pathToFileURL(join(ROOT, 'scripts/docs-reference.mjs')).href)) as ReferenceScript;
  const program = await reference.loadProgram(pathToFileURL(join(ROOT, 'dist/cli/main.js')).href);
  commands = reference.listCommands(program).map((command) => ({
    path: command.path,
    flags: new Set([...command.options.flatMap((option) => [option.long, option.short]).filter((flag): flag is string => flag !== undefined), '--help', '-h']),
  }));
}, 180_000);

describe('docs', () => {
  it('every relative link and #anchor in README.md, CONTRIBUTING.md, docs/ and bench/ resolves', () => {
    const files = docsFiles(ROOT);
    expect(files).toEqual(expect.arrayContaining(['README.md', 'CONTRIBUTING.md', 'docs/README.md', 'bench/README.md']));
    expect(checkLinks(ROOT, files).map((problem) => `${problem.file}:${problem.line} ${problem.message}`)).toEqual([]);
  });

  it('README.md is a doorway of at most 200 lines', () => {
    expect(read('README.md').split('\n').length).toBeLessThanOrEqual(200);
  });

  it('docs/reference/ is what `npm run docs:reference` renders from the code today', async () => {
    const rendered = await reference.renderReference(ROOT);
    expect(Object.keys(rendered).sort()).toEqual([
      'docs/reference/cli.md',
      'docs/reference/configuration.md',
      'docs/reference/error-codes.md',
      'docs/reference/metrics.md',
    ]);
    for (const [file, content] of Object.entries(rendered)) expect(read(file), `${file} is stale: run npm run docs:reference`).toBe(content);
  });

  it('every CLI command and every option of every command is in the CLI reference and in the hand-written docs', () => {
    expect(commands.length).toBeGreaterThan(20);
    const cli = read('docs/reference/cli.md');
    const anchors = anchorsOf(cli);
    const prose = handWritten().map(read).join('\n');
    for (const { path, flags } of commands) {
      expect(anchors.has(githubSlug(`mcp-tasks ${path.join(' ')}`)), `no section for mcp-tasks ${path.join(' ')} in docs/reference/cli.md`).toBe(true);
      const longFlags = [...flags].filter((flag) => flag.startsWith('--'));
      expect(unmentioned(cli, longFlags), `options of ${path.join(' ')} missing from docs/reference/cli.md`).toEqual([]);
    }
    const paths = commands.map((command) => command.path.join(' '));
    expect(
      unmentioned(prose, paths, (escaped) => `(?:mcp-tasks|main\\.js) ${escaped}(?![\\w-])`),
      'commands no guide mentions',
    ).toEqual([]);
    expect(
      unmentioned(
        prose,
        commands.flatMap((command) => [...command.flags].filter((flag) => flag.startsWith('--'))),
      ),
      'options no guide mentions',
    ).toEqual([]);
  });

  it('every command line in the hand-written docs passes only options its command has', () => {
    const problems = handWritten().flatMap((file) => commandLineProblems(read(file), commands).map((problem) => `${file}:${problem.line} ${problem.message}`));
    expect(problems).toEqual([]);
  });

  it('every key of mcp-tasks.schema.json is in the configuration reference', () => {
    const keys: string[] = [];
    const walk = (schema: { properties?: Record<string, { type?: string; properties?: object; additionalProperties?: unknown }> }, prefix: string): void => {
      for (const [name, property] of Object.entries(schema.properties ?? {})) {
        if (property.type === 'object' && property.properties) walk(property as never, `${prefix}${name}.`);
        else keys.push(`${prefix}${name}`);
      }
    };
    walk(JSON.parse(read('mcp-tasks.schema.json')) as never, '');
    expect(keys).toEqual(expect.arrayContaining(['limits.leaseMs', 'rollout.canary', 'dashboardOptions.clientId']));
    expect(unmentioned(read('docs/reference/configuration.md'), keys, (escaped) => `\`${escaped}\``)).toEqual([]);
  });

  it('every repository file the hand-written docs name in inline code exists', () => {
    const problems = handWritten().flatMap((file) => missingPaths(ROOT, read(file)).map((found) => `${file}:${found.line} ${found.path}`));
    expect(problems).toEqual([]);
  });

  it('the metrics the observability guide names are the metrics the reference lists', () => {
    const names = (text: string): string[] => [...new Set([...text.matchAll(/`(mcp_tasks_[a-z_]+)`/g)].map((match) => match[1] as string))].sort();
    const registered = names(read('docs/reference/metrics.md'));
    expect(registered.length).toBeGreaterThan(20);
    expect(names(read('docs/operations/observability.md'))).toEqual(registered);
  });
});

describe('the docs checker finds what is broken (negative controls)', () => {
  const temp = makeTempDir('docs-check-');
  afterAll(() => temp.remove());

  it('reports a missing file and a missing anchor, and accepts good links, external links and links in code', () => {
    mkdirSync(join(temp.dir, 'docs/guides'), { recursive: true });
    writeFileSync(join(temp.dir, 'docs/guides/a.md'), '# Guide A\n\n## Hosts without task support: `--task-fallback-tools`\n\n## Setup\n\n## Setup\n');
    writeFileSync(
      join(temp.dir, 'README.md'),
      [
        '# Fixture',
        '[good](docs/guides/a.md#hosts-without-task-support---task-fallback-tools) [repeat](docs/guides/a.md#setup-1) [dir](docs/)',
        '[missing file](docs/guides/nope.md)',
        '[missing anchor](docs/guides/a.md#no-such-heading)',
        '[self](#fixture) [self missing](#other) ![image](docs/missing.png) [web](https://example.com/x.md)',
        '`[in code](nowhere.md)`',
        '```md',
        '[in a fence](nowhere.md)',
        '```',
        '[outside](../../etc/passwd)',
      ].join('\n'),
    );
    const problems = checkLinks(temp.dir, docsFiles(temp.dir)).map((problem) => `${problem.file}:${problem.line} ${problem.message}`);
    expect(problems).toEqual([
      'README.md:3 docs/guides/nope.md: no such file or directory',
      'README.md:4 docs/guides/a.md#no-such-heading: no heading or anchor "#no-such-heading" in docs/guides/a.md',
      'README.md:5 #other: no heading or anchor "#other" in README.md',
      'README.md:5 docs/missing.png: no such file or directory',
      'README.md:10 ../../etc/passwd: points outside the repository',
    ]);
  });

  it('slugs headings as GitHub does, and finds links outside code only', () => {
    expect(githubSlug('A 5-minute tour: one long task, `kill -9`, resume')).toBe('a-5-minute-tour-one-long-task-kill--9-resume');
    expect(githubSlug("Tools never reach the server's own state")).toBe('tools-never-reach-the-servers-own-state');
    expect(githubSlug('Static tokens: `--auth tokens:FILE`')).toBe('static-tokens---auth-tokensfile');
    expect(linksOf('see [a](b.md) and `[c](d.md)`\n[ref]: e.md').map((link) => link.target)).toEqual(['b.md', 'e.md']);
  });

  it('reports a command, an option and a key the docs never mention', () => {
    const text = 'Run `mcp-tasks serve --port 3100` or `mcp-tasks admin kill-switch on`; set `limits.leaseMs`.';
    expect(unmentioned(text, ['serve', 'admin kill-switch', 'doctor'], (escaped) => `mcp-tasks ${escaped}(?![\\w-])`)).toEqual(['doctor']);
    expect(unmentioned(text, ['--port', '--por', '--host'])).toEqual(['--por', '--host']);
    expect(unmentioned(text, ['limits.leaseMs', 'limits.maxTtlMs'], (escaped) => `\`${escaped}\``)).toEqual(['limits.maxTtlMs']);
  });

  it('reports an option its command does not have, and a named file that does not exist', () => {
    const fixture: CommandFlags[] = [
      { path: ['get'], flags: new Set(['--url', '--json']) },
      { path: ['admin', 'watch'], flags: new Set(['--once']) },
    ];
    const markdown = [
      'mcp-tasks get abc --json --url http://x',
      'node dist/cli/main.js get abc --bogus   # --comment is not a flag',
      '`mcp-tasks admin watch --once --json`',
    ].join('\n');
    expect(commandLineProblems(markdown, fixture)).toEqual([
      { line: 2, message: 'mcp-tasks get has no option --bogus' },
      { line: 3, message: 'mcp-tasks admin watch has no option --json' },
    ]);
    expect(missingPaths(ROOT, 'see `src/cli/main.ts`, `server/tools-call.ts`, `src/cli/nope.ts` and `tools/call`').map((found) => found.path)).toEqual([
      'src/cli/nope.ts',
    ]);
  });
});
