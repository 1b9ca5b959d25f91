import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/**
 * The checks behind `test/docs/docs-links.test.ts`, as functions of a repository root so that their negative
 * controls can run them on small fixture trees: relative links and `#anchors` resolve, and a list of names (CLI
 * commands, options, configuration keys) each appears in a text.
 */

/** One finding: where, and what is wrong. */
export interface DocsProblem {
  /** Repository-relative path of the markdown file. */
  file: string;
  /** 1-based line of the link. */
  line: number;
  message: string;
}

/** The markdown files the docs consist of: `README.md`, `CONTRIBUTING.md`, `docs/**`, `bench/README.md` and the dated `bench/results/*.md`. */
export function docsFiles(root: string): string[] {
  const walk = (dir: string): string[] =>
    existsSync(dir)
      ? readdirSync(dir).flatMap((name) => {
          const path = join(dir, name);
          return statSync(path).isDirectory() ? walk(path) : name.endsWith('.md') ? [path] : [];
        })
      : [];
  const results = walk(join(root, 'bench/results')).filter((path) => /^\d{4}-\d{2}-\d{2}-/.test(path.split(sep).at(-1) ?? ''));
  return [
    ...['README.md', 'CONTRIBUTING.md', 'bench/README.md'].map((name) => join(root, name)).filter((path) => existsSync(path)),
    ...walk(join(root, 'docs')),
    ...results,
  ]
    .map((path) => relative(root, path).split(sep).join('/'))
    .sort();
}

/** Markdown without fenced code blocks (each line kept, blanked, so line numbers stay). */
function withoutFences(markdown: string): string[] {
  let fence: string | null = null;
  return markdown.split('\n').map((line) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === null && marker !== undefined) {
      fence = marker[0] as string;
      return '';
    }
    if (fence !== null) {
      if (marker !== undefined && marker[0] === fence) fence = null;
      return '';
    }
    return line;
  });
}

/**
 * GitHub's anchor of a heading (github-slugger): the rendered text lower-cased, everything but letters, digits,
 * `_`, `-` and spaces removed, spaces turned into `-`.
 */
export function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** The anchors a markdown file offers: heading slugs (repeats get `-1`, `-2` …) and explicit `<a id|name="…">`. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutFences(markdown)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const slug = githubSlug(heading);
      const count = seen.get(slug) ?? 0;
      seen.set(slug, count + 1);
      anchors.add(count === 0 ? slug : `${slug}-${count}`);
    }
    for (const match of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1] as string);
  }
  return anchors;
}

/** Link targets of a markdown text (inline links, images, reference definitions), outside code, with their lines. */
export function linksOf(markdown: string): { target: string; line: number }[] {
  const links: { target: string; line: number }[] = [];
  withoutFences(markdown).forEach((raw, index) => {
    const line = raw.replace(/`+[^`]*`+/g, '');
    for (const match of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ target: match[1] as string, line: index + 1 });
    const definition = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$/.exec(line);
    if (definition) links.push({ target: definition[1] as string, line: index + 1 });
  });
  return links;
}

/**
 * Every relative link of `files` (repository-relative) must name an existing file or directory inside `root`, and
 * an `#anchor` into a markdown file must be one of its anchors. External links (`scheme:`) are not followed.
 */
export function checkLinks(root: string, files: readonly string[]): DocsProblem[] {
  const problems: DocsProblem[] = [];
  const anchorCache = new Map<string, Set<string>>();
  const anchors = (path: string): Set<string> => {
    let found = anchorCache.get(path);
    if (!found) anchorCache.set(path, (found = anchorsOf(readFileSync(path, 'utf8'))));
    return found;
  };
  for (const file of files) {
    const source = join(root, file);
    for (const { target, line } of linksOf(readFileSync(source, 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      const [pathPart = '', anchor] = target.split('#', 2) as [string, string | undefined];
      const path = pathPart === '' ? source : resolve(dirname(source), decodeURIComponent(pathPart));
      const report = (message: string): void => void problems.push({ file, line, message: `${target}: ${message}` });
      if (path !== resolve(root) && !path.startsWith(resolve(root) + sep)) {
        report('points outside the repository');
        continue;
      }
      if (!existsSync(path)) {
        report('no such file or directory');
        continue;
      }
      if (anchor !== undefined && path.endsWith('.md') && !anchors(path).has(anchor)) report(`no heading or anchor "#${anchor}" in ${relative(root, path)}`);
    }
  }
  return problems;
}

/** The names of `names` that `text` never mentions: `pattern(name)` builds the regular expression that finds one. */
export function unmentioned(text: string, names: Iterable<string>, pattern: (escaped: string) => string = (escaped) => `${escaped}(?![\\w-])`): string[] {
  const escape = (value: string): string => value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return [...new Set(names)].filter((name) => !new RegExp(pattern(escape(name))).test(text));
}

/** One CLI command for {@link commandLineProblems}: its path (`['admin', 'kill-switch']`) and the flags it takes. */
export interface CommandFlags {
  path: readonly string[];
  flags: ReadonlySet<string>;
}

/**
 * Command lines in `markdown` (`mcp-tasks <command> …` or `node dist/cli/main.js <command> …`, in code blocks or
 * inline code) that pass a flag their command does not have. The line is read up to a pipe, `#`, `&&`, `;` or the
 * end of a code span, so comments and following commands are not taken for its flags.
 */
export function commandLineProblems(markdown: string, commands: readonly CommandFlags[]): { line: number; message: string }[] {
  const byPath = new Map(commands.map((command) => [command.path.join(' '), command.flags]));
  const problems: { line: number; message: string }[] = [];
  markdown.split('\n').forEach((line, index) => {
    for (const match of line.matchAll(/(?:mcp-tasks|main\.js)((?: [a-z][a-z-]*){1,2})((?:(?! \| |`|\||#|&&|;).)*)/g)) {
      const words = (match[1] as string).trim().split(' ');
      const path = byPath.has(words.join(' ')) ? words.join(' ') : byPath.has(words[0] as string) ? (words[0] as string) : undefined;
      if (path === undefined) continue;
      const rest = `${path === words.join(' ') ? '' : words.slice(1).join(' ')}${match[2] as string}`;
      for (const flag of rest.matchAll(/(?<![\w-])(--?[a-z][a-z0-9-]*)/g)) {
        if (!(byPath.get(path) as ReadonlySet<string>).has(flag[1] as string))
          problems.push({ line: index + 1, message: `mcp-tasks ${path} has no option ${flag[1] as string}` });
      }
    }
  });
  return problems;
}

/**
 * Repository paths named in inline code (`src/server/tools-call.ts`, or `server/tools-call.ts` relative to `src/`)
 * that do not exist. Only names with a file extension under a known top folder count, so `tools/call` is a method.
 */
export function missingPaths(root: string, markdown: string): { line: number; path: string }[] {
  const top = '(?:src|test|bench|scripts|docs|web|tools|protocol|core|store|service|execution|ledger|auth|server|dashboard|client|cli|testing|verify|ops)';
  const pattern = new RegExp(`\`(${top}/[\\w./-]+\\.(?:ts|mjs|js|json|md|lua|png))\``, 'g');
  const found: { line: number; path: string }[] = [];
  withoutFences(markdown).forEach((line, index) => {
    for (const match of line.matchAll(pattern)) {
      const path = match[1] as string;
      if (!existsSync(join(root, path)) && !existsSync(join(root, 'src', path))) found.push({ line: index + 1, path });
    }
  });
  return found;
}
