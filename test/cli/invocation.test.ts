/**
 * The command the CLI's hints name (`follow it with: … watch <id>`): the one the user can type again, so a hint works
 * when copied — `node <path to main.js>` in the README's tour, where `mcp-tasks` is not on PATH without `npm link`.
 */
import { execFileSync } from 'node:child_process';

import { describe, expect, it } from 'vitest';

import { cliCommand } from '../../src/cli/invocation.js';

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
