import { invalidParams } from '../core/errors.js';
import { redactSecrets } from '../core/redaction.js';

/**
 * `--upstream <spec>` (issue 28): an MCP server whose tools this server lists as its own, each call run as a task.
 * A spec is `<name>=stdio:<command> [args…]` (a child process spoken to over stdio, one per process that runs
 * calls) or `<name>=http(s)://host/mcp` (Streamable HTTP). The name prefixes every tool of the upstream:
 * `everything=stdio:…` lists its `echo` as `everything_echo`.
 */
export type UpstreamSpec =
  | { name: string; transport: 'stdio'; command: string; args: string[] }
  | {
      name: string;
      transport: 'http';
      /** The endpoint, without credentials (a URL with a user or password is refused: it would show in logs). */
      url: string;
    };

/**
 * A name: lowercase letters, digits and `-`, at most 32 characters, so the first `_` of a listed tool name is always
 * the one between name and upstream tool, and every listed name stays within the tool-name characters of MCP
 * (SEP-986: `A-Z a-z 0-9 _ - .`) and of model APIs that refuse the dot.
 */
const NAME = /^[a-z0-9][a-z0-9-]{0,31}$/;
/** SEP-986 (2025-11-25 tools): tool names are 1–128 characters of `A-Z a-z 0-9 _ - .`. */
const TOOL_NAME = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * Default longest wait for an upstream's `initialize` and `tools/list` answers (ms), at start and at every reconnect
 * (`upstreamStartTimeoutMs`); the SDK client's own request timeout (60 s) is not used.
 */
export const DEFAULT_UPSTREAM_START_TIMEOUT_MS = 30_000;

const EXAMPLE = 'e.g. everything=stdio:npx -y @modelcontextprotocol/server-everything or docs=https://mcp.example.com/mcp';

/**
 * Parse one `--upstream` value.
 * @throws TasksError `-32602` saying what is wrong (the CLI reports it as a usage error, exit 64).
 */
export function parseUpstreamSpec(text: string): UpstreamSpec {
  const equals = text.indexOf('=');
  const name = equals < 0 ? '' : text.slice(0, equals);
  const target = equals < 0 ? text : text.slice(equals + 1);
  if (!NAME.test(name)) {
    // `stdio:node x --a=b` or a URL with `=` in its query has no name: the `=` is the target's.
    const named = equals >= 0 && !/^(stdio:|https?:)/i.test(text);
    throw invalidParams(named ? badName(name, target) : badName('', text, false));
  }
  if (target.startsWith('stdio:')) {
    const [command, ...args] = splitCommand(target.slice('stdio:'.length), `${name}=stdio:…`);
    if (command === undefined) throw invalidParams(`--upstream ${name}=stdio:: stdio: needs a command (${EXAMPLE})`);
    return { name, transport: 'stdio', command, args };
  }
  if (/^https?:\/\//i.test(target)) {
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      throw invalidParams(`--upstream ${name}=…: not a URL`);
    }
    // Never echo a URL that carries credentials: the error message would show them.
    if (url.username || url.password) throw invalidParams(`--upstream ${name}=…: a URL with a user or password is refused (it would show in logs)`);
    return { name, transport: 'http', url: url.href };
  }
  throw invalidParams(`--upstream ${name}=…: after "${name}=" give stdio:<command …> or an http(s):// URL (${EXAMPLE})`);
}

/**
 * What is wrong with the name of a spec, said for the case at hand. The target is shown only as its kind (`stdio:…`,
 * `https://…`): a URL in it may carry credentials, and a command line may hold secrets.
 */
function badName(raw: string, target: string, named = true): string {
  const shown = target.startsWith('stdio:') ? 'stdio:…' : /^https?:\/\//i.test(target) ? `${target.slice(0, target.indexOf(':')).toLowerCase()}://…` : '…';
  const name = sanitizeName(raw);
  // Text with a blank, ':', '/' or '@', or that long, is no name but a target whose "=" came later (a forgotten "="
  // after the name, a token in a command, a URL's user:password or query): it is never shown.
  if (named && (/[\s:/@]/.test(raw) || raw.length > 40)) {
    return `--upstream …: the text before the first "=" is not a name (forgot the "=" after the name?); give <name>=stdio:<command …> or <name>=https://… (${EXAMPLE})`;
  }
  if (!named) return `--upstream ${shown}: give the upstream a name first, <name>=${shown}: the prefix of its tools (${EXAMPLE})`;
  const why =
    name === ''
      ? 'the name before "=" is empty'
      : name.length > 32
        ? `the name is longer than 32 characters`
        : /[A-Z]/.test(name) && NAME.test(name.toLowerCase())
          ? `the name "${name}" has uppercase letters; use ${JSON.stringify(name.toLowerCase())}`
          : name.startsWith('-')
            ? `the name "${name}" starts with -`
            : `the name "${name}" may hold only lowercase letters, digits and - (no ${JSON.stringify([...name].find((char) => !/[a-z0-9-]/.test(char)))}: the first _ of a listed tool name separates the upstream from its tool)`;
  return `--upstream ${name}=${shown}: ${why} (${EXAMPLE})`;
}

/** A bad name as shown in its error: printable ASCII, at most 40 characters. */
function sanitizeName(name: string): string {
  const printable = name.replace(/[^\x20-\x7e]/g, '?');
  return printable.length > 40 ? `${printable.slice(0, 39)}…` : printable;
}

/**
 * Split a command line the way a POSIX shell splits words, without any expansion: blanks separate words, `'…'` is
 * literal, `"…"` keeps blanks (a backslash escapes `"` and `\` in it), a backslash outside quotes escapes the next
 * character. No variables, globs or redirections: the words go to the process as they are.
 */
export function splitCommand(line: string, shown: string = line): string[] {
  const words: string[] = [];
  // `word` is meaningful once `inWord`: '' is a word of its own when it was quoted ('' or "").
  let word = '';
  let inWord = false;
  let quote: "'" | '"' | undefined;
  for (let index = 0; index < line.length; index++) {
    const char = line[index] as string;
    const next = line[index + 1];
    if (quote === "'") {
      if (char === "'") quote = undefined;
      else word += char;
    } else if (quote === '"') {
      if (char === '"') quote = undefined;
      else if (char === '\\' && (next === '"' || next === '\\')) word += line[++index];
      else word += char;
    } else if (char === "'" || char === '"') {
      quote = char;
      inWord = true;
    } else if (/\s/.test(char)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += char === '\\' && next !== undefined ? line[++index] : char;
      inWord = true;
    }
  }
  if (quote) throw invalidParams(`--upstream ${shown}: unterminated ${quote === '"' ? 'double' : 'single'} quote`);
  if (inWord) words.push(word);
  return words;
}

/**
 * The name under which an upstream tool is listed here (`<upstream>_<tool>`), or `undefined` when it cannot be a
 * valid MCP tool name (characters outside SEP-986, longer than 128): such a tool is left out, with a warning.
 */
export function listedToolName(upstream: string, tool: string): string | undefined {
  const name = `${upstream}_${tool}`;
  return TOOL_NAME.test(name) ? name : undefined;
}

/** How a spec is shown in logs and the banner: the command (secret-like words redacted) or the URL without its query. */
export function describeUpstream(spec: UpstreamSpec): string {
  if (spec.transport === 'stdio') return `${spec.name} (stdio: ${redactSecrets([spec.command, ...spec.args].join(' '))})`;
  const url = new URL(spec.url);
  return `${spec.name} (${url.origin}${url.pathname})`;
}
