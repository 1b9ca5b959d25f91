/** Characters a POSIX shell reads as themselves anywhere in a word: a word of only these needs no quotes. */
const PLAIN = /^[\w./@%+=:,-]+$/;

/**
 * `word` as a POSIX shell reads it back: as it is when it holds nothing the shell would split or expand, else in
 * single quotes. For every command this package suggests (the CLI's hints, an error's "check with …"): the words in
 * it may be a server's (a task id), and an agent may run the command as printed.
 */
export function shellWord(word: string): string {
  return PLAIN.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
