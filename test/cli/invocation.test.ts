/**
 * The command the CLI's hints name (`follow it with: … watch <id>`): the one the user can type again, so a hint works
 * when copied — `node <path to main.js>` in the README's tour, where `mcp-tasks` is not on PATH without `npm link`.
 */
import { execFileSync } from 'node:child_process';

import { describe, expect, it } from 'vitest';

import { cliCommand, taskCommand } from '../../src/cli/invocation.js';

describe('cliCommand', () => {
  it('names mcp-tasks when started under that name (installed, npm link)', () => {
    expect(cliCommand('/usr/local/bin/mcp-tasks')).toBe('mcp-tasks');
    expect(cliCommand('/repo/node_modules/.bin/mcp-tasks')).toBe('mcp-tasks');
  });

  it('names node with the absolute script path when started as node dist/cli/main.js (from any directory)', () => {
    expect(cliCommand('/repo/dist/cli/main.js')).toBe('node /repo/dist/cli/main.js');
    expect(cliCommand('/repo/dist/cli/main')).toBe('node /repo/dist/cli/main.js');
  });

  it('quotes a path a shell would split or expand, so the hint runs as printed', () => {
    for (const path of ['/my repo/dist/cli/main.js', "/it's/dist/cli/main.js", '/a$b/`x`/"q"/main.js']) {
      const command = cliCommand(path);
      // The shell hands node exactly the path back (printed by a stand-in for node).
      expect(execFileSync('sh', ['-c', command.replace(/^node /, 'printf %s ')]).toString()).toBe(path);
    }
  });
});

describe('taskCommand', () => {
  it("quotes a server's task id that a shell would act on, so the command hands it back as one word", () => {
    for (const taskId of ['t;echo${IFS}pwned|cat', '$(id)', '`id`', "it's", 'a&b', 'x>y', '~root', '*', 'a#b']) {
      const command = taskCommand('watch', taskId, { url: 'http://127.0.0.1:1/mcp' });
      const words = execFileSync('sh', ['-c', `set -- ${command}; printf '%s\\n' "$@"`])
        .toString()
        .split('\n');
      expect(words.slice(words.indexOf('watch'), words.indexOf('watch') + 4), command).toEqual(['watch', taskId, '--url', 'http://127.0.0.1:1/mcp']);
    }
  });

  it('control: leaves the ids real servers make as they are (UUID, hex, base64url, prefixed)', () => {
    for (const taskId of ['3f2b8c1e-7a4d-4e8f-9b6a-1c2d3e4f5a6b', '4f0c9b1e2d7a', 'Zm9v_YmFy-YmF6', 'tsk_4f0c9b1e2d7a', 'urn:x:1.2@h%20'])
      expect(taskCommand('get', taskId).endsWith(` get ${taskId}`)).toBe(true);
  });
});
