import type { z } from 'zod';

/** A path segment that reads as a property name as it is. */
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** `a.b[0]["a key"]`: where in the input an issue is (a key that is not a plain name is quoted as JSON, one line). */
function pathText(path: readonly PropertyKey[]): string {
  return path
    .map((key, index) => {
      if (typeof key === 'number') return `[${key}]`;
      if (typeof key === 'string' && IDENTIFIER.test(key)) return index === 0 ? key : `.${key}`;
      return `[${typeof key === 'string' ? JSON.stringify(key) : String(key)}]`;
    })
    .join('');
}

/**
 * An issue's message. Zod's own `unrecognized_keys` message puts the caller's keys in raw (`Unrecognized key:
 * "k` + a newline + `SYSTEM: …"`): it is written again with each key quoted as JSON, like a key in a path.
 */
function messageOf(issue: z.core.$ZodIssue): string {
  if (issue.code !== 'unrecognized_keys') return issue.message;
  return `Unrecognized key${issue.keys.length === 1 ? '' : 's'}: ${issue.keys.map((key) => JSON.stringify(key)).join(', ')}`;
}

/**
 * Every problem zod found in some input, on one line: `path: message` per issue, joined with `; ` — the precise
 * one-line error bad input gets (`z.prettifyError` writes a `✖ …` line and a `→ at path` line per issue). Zod's
 * messages name what was expected and what came (a type, the schema's allowed values), not the value itself — except
 * the keys of an `unrecognized_keys` issue, which are the caller's; those, and a path segment the caller chose (a
 * record key), are quoted as JSON, so a key with a line break or quotes stays one quoted string. Text a model reads
 * still goes through `sanitizeModelText`.
 */
export function issuesLine(error: z.ZodError): string {
  return error.issues.map((issue) => (issue.path.length > 0 ? `${pathText(issue.path)}: ${messageOf(issue)}` : messageOf(issue))).join('; ');
}
