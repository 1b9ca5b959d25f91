/**
 * The command the CLI's hints name (`follow it with: … watch <id>`): the one the user typed, so a hint works when
 * copied — `node dist/cli/main.js` in the README's tour, where `mcp-tasks` is not on PATH without `npm link`.
 */
import { describe, expect, it } from 'vitest';

import { cliCommand } from '../../src/cli/invocation.js';

describe('cliCommand', () => {
  it('names mcp-tasks when started under that name (installed, npm link, npx)', () => {
    expect(cliCommand('/usr/local/bin/mcp-tasks', '/home/u')).toBe('mcp-tasks');
    expect(cliCommand('/repo/node_modules/.bin/mcp-tasks', '/repo')).toBe('mcp-tasks');
  });

  it('names node with the script path from the current directory when started as node dist/cli/main.js', () => {
    expect(cliCommand('/repo/dist/cli/main.js', '/repo')).toBe('node dist/cli/main.js');
    expect(cliCommand('/repo/dist/cli/main.js', '/repo/docs')).toBe('node ../dist/cli/main.js');
    expect(cliCommand('/my repo/dist/cli/main.js', '/my repo')).toBe('node dist/cli/main.js');
    expect(cliCommand('/my repo/dist/cli/main.js', '/tmp')).toBe('node "../my repo/dist/cli/main.js"');
  });
});
