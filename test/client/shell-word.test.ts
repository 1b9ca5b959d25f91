import { spawnSync } from 'node:child_process';

import { describe, expect, it } from 'vitest';

import { TaskOutcomeUnknownError } from '../../src/client/index.js';
import { shellWord } from '../../src/client/shell-word.js';

// Every command this package suggests may hold a server's word (a task id: printable ASCII, which includes ; | $ `)
// and an agent may run it as printed: the shell must read each word back as it was.
describe('shellWord, and the command a TaskOutcomeUnknownError suggests', () => {
  const hostile = ['t;echo${IFS}pwned|sh', "a'b", '$(id)', '`id`', 'x&&y', '~root', '-rf', 'it\'s"q"'];

  it('a POSIX shell reads every word back as it was (nothing runs, nothing expands)', () => {
    for (const word of hostile) {
      const run = spawnSync('sh', ['-c', `printf '%s' ${shellWord(word)}`], { encoding: 'utf8' });
      expect(run.stdout, word).toBe(word);
    }
  });

  it("the outcome-unknown error's 'check with mcp-tasks get …' quotes the server's id; control: a plain id stays bare", () => {
    const quoted = new TaskOutcomeUnknownError('t;echo${IFS}pwned|sh', 'not_found', 'working', undefined).message;
    expect(quoted).toContain("check with mcp-tasks get 't;echo${IFS}pwned|sh' once");
    const plain = new TaskOutcomeUnknownError('Ab9_-x', 'not_found', 'working', undefined).message;
    expect(plain).toContain('check with mcp-tasks get Ab9_-x once');
  });
});
