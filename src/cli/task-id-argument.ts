/** The commands whose one positional argument is a task id, or an operation id (the same 128-bit base64url form). */
const TASK_ID_COMMANDS = new Set(['get', 'watch', 'cancel', 'answer', 'ops show', 'ops reconcile']);
/** A task id that starts with "-" (22 base64url characters). */
const DASH_TASK_ID = /^-[A-Za-z0-9_-]{21}$/;

/**
 * Task ids are base64url. New ids begin with a letter or digit (`taskIdOf`), but a store may still hold ids made
 * before that change, of which about one in 64 starts with "-", which commander would read as an option. For the
 * commands that take a task id (or an operation id: `ops show|reconcile`), such an argument is moved behind "--", so
 * `mcp-tasks watch -1ERH…` just works.
 * @param argv - `process.argv` (node, script, command, …)
 */
export function protectDashTaskIds(argv: readonly string[]): string[] {
  const last = argv[2] === 'ops' ? 3 : 2;
  if (!TASK_ID_COMMANDS.has(argv.slice(2, last + 1).join(' ')) || argv.includes('--')) return [...argv];
  const index = argv.findIndex((arg, position) => position > last && DASH_TASK_ID.test(arg));
  if (index < 0) return [...argv];
  return [...argv.slice(0, index), ...argv.slice(index + 1), '--', argv[index] as string];
}
