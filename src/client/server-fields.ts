import { z } from 'zod';

import { findRoleMarker } from '../protocol/model-text.js';
import { remoteLine } from './remote-text.js';

/**
 * Fields of a server's task that the requestor repeats verbatim, not as quoted text: the task id. The CLI prints it
 * in its own lines (`mcp-tasks: task <id> created`, `call --detach`'s stdout), saves it to the journal and puts it in
 * the commands it suggests (`follow it with: mcp-tasks watch <id>`), which an agent may run; the library hands it
 * to whatever embeds it. Rewriting it as quoted text (`remoteLine`) would make it name another task, so an id that
 * could not be printed as it is gets refused where it arrives, in the wire schemas, and never reaches a caller.
 */

/** Most characters of a task id this client accepts: ids real servers make (UUIDs, hex, base64url) are far shorter. */
export const TASK_ID_MAX_CHARS = 256;

/** Printable ASCII without the space (0x21–0x7E): no control, no line break, nothing a terminal or a shell splits on. */
const PRINTABLE_WORD = /^[\x21-\x7e]+$/;

/**
 * Why `taskId` cannot be used as a task id here, or `undefined` when it can. The spec makes a task id any string
 * (2025-11-25 `Task.taskId` and the Tasks Extension's `Task.taskId` are `"type": "string"`, R13: "strings,
 * receiver-generated, unique"); this client asks more, because it prints the id as it is: 1 to
 * {@link TASK_ID_MAX_CHARS} printable ASCII characters without spaces, and no role marker (`SYSTEM:`, `<system>`,
 * `[INST]`), which the model-facing rule would rewrite. Shell metacharacters (`;`, `|`, `$`) stay allowed — a
 * command the CLI suggests quotes them (`taskCommand`).
 */
export function taskIdProblem(taskId: string): string | undefined {
  if (taskId.length === 0) return 'is empty';
  if (taskId.length > TASK_ID_MAX_CHARS) return `is ${taskId.length} characters long (at most ${TASK_ID_MAX_CHARS})`;
  if (!PRINTABLE_WORD.test(taskId)) return 'is not printable ASCII without spaces';
  if (findRoleMarker(taskId) !== undefined) return 'contains a role marker';
  return undefined;
}

/**
 * `taskId` as an error message quotes it: one visible line of at most 120 characters ({@link remoteLine}), in double
 * quotes. Not JSON-escaped: `\nSYSTEM:` would hide the role marker behind the `n` the escape puts before it.
 */
export function quotedTaskId(taskId: string): string {
  return `"${remoteLine(taskId, 120)}"`;
}

/** A task id as the wire schemas and the journal accept it (see {@link taskIdProblem}). */
export const TaskIdSchema = z.string().superRefine((taskId, context) => {
  const problem = taskIdProblem(taskId);
  if (problem !== undefined) context.addIssue({ code: 'custom', message: `the task id ${quotedTaskId(taskId)} ${problem}; this client refuses it` });
});
