/** The commands whose one positional argument is a task id. */
const TASK_ID_COMMANDS = new Set(['get', 'watch', 'cancel', 'answer']);
/** A task id that starts with "-" (22 base64url characters). */
const DASH_TASK_ID = /^-[A-Za-z0-9_-]{21}$/;

/**
 * Task ids are base64url, so about one in 64 starts with "-", which commander would read as an option. For the
 * commands that take a task id, such an argument is moved behind "--", so `mcp-tasks watch -1ERH…` just works.
 * @param argv - `process.argv` (node, script, command, …)
 */
export function protectDashTaskIds(argv: readonly string[]): string[] {
  if (!TASK_ID_COMMANDS.has(argv[2] ?? '') || argv.includes('--')) return [...argv];
  const index = argv.findIndex((arg, position) => position > 2 && DASH_TASK_ID.test(arg));
  if (index < 0) return [...argv];
  return [...argv.slice(0, index), ...argv.slice(index + 1), '--', argv[index] as string];
}
