import { toModelLine } from '../protocol/model-text.js';

/**
 * Text a server sent, as the requestor quotes it. The requestor talks to any MCP server, and what it quotes reaches
 * a terminal (where escape sequences clear the screen, write the clipboard — OSC 52 — or disguise a link) and, when
 * an agent such as Claude Code runs the CLI or embeds this library, a model (which may take a line `SYSTEM: …` or a
 * forged `mcp-tasks: task completed` for its own). mcp-tasks's own server makes its text fit the model-facing rule
 * (`protocol/model-text.ts`); another server's text gets the same treatment here, on the requestor's side
 * (`docs/security/model-facing-text.md`).
 */

/**
 * Most UTF-16 code units of one server field quoted in a line of ours: an error message or a question may say more
 * than a status does ({@link toModelLine}'s default, 512), yet a line stays readable.
 */
export const REMOTE_LINE_MAX_CHARS = 2_000;

/**
 * A server's short text (an error message, a status, a server or tool name, a question) as part of one line of
 * ours: one line of visible characters, escape sequences removed, role markers neutralised, at most `maxChars`
 * (see `toModelLine`). Anything not a string is printed as `String(text)` first.
 */
export function remoteLine(text: unknown, maxChars = REMOTE_LINE_MAX_CHARS): string {
  return toModelLine(typeof text === 'string' ? text : String(text), { maxChars });
}

/**
 * A server's timestamp (`createdAt`, `lastUpdatedAt`) as printed in a line or a table cell of ours: a
 * {@link remoteLine} of at most 64 characters. The spec asks ISO 8601 (R17), which fits with room to spare, but the
 * client does not refuse a task over its timestamps: whatever a server sent there is shown by the rule.
 */
export function remoteTimestamp(text: unknown): string {
  return remoteLine(text, 64);
}

/**
 * A server's text that may span lines (a question's message or a field's description) under a line of ours: each of
 * its lines a {@link remoteLine} (empty ones dropped), joined with a line break and `indent`, so none of them can
 * begin at the margin where the CLI's own lines (`mcp-tasks: …`) do.
 */
export function remoteLines(text: unknown, indent: string): string {
  return (typeof text === 'string' ? text : String(text))
    .split(/\r\n|[\n\r\u2028\u2029\u0085]/)
    .map((line) => remoteLine(line))
    .filter((line) => line.length > 0)
    .join(`\n${indent}`);
}
