import { basename, relative } from 'node:path';

/**
 * The command a user types to run this CLI again, for the hints it prints (`follow it with: … watch <id>`): `mcp-tasks`
 * when it was started under that name (installed, `npm link`ed, or through `npx`), else `node <path to main.js>` as
 * seen from the current directory — the form the README's tour uses, which works without anything on `PATH`.
 * @param argv1 - the script path Node was started with (`process.argv[1]`)
 * @param cwd - the directory the hint is read in
 */
export function cliCommand(argv1: string | undefined = process.argv[1], cwd: string = process.cwd()): string {
  if (argv1 === undefined || basename(argv1) !== 'main.js') return 'mcp-tasks';
  const path = relative(cwd, argv1) || argv1;
  return /\s/.test(path) ? `node "${path}"` : `node ${path}`;
}
