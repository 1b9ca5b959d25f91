import { describe, expect, it } from 'vitest';

import { protectDashTaskIds } from '../../src/cli/task-id-argument.js';

describe('task ids that start with "-"', () => {
  const id = '-1ERHetepnQOGrDDcxvbEg';

  it('are moved behind "--" for get, watch, cancel and answer, wherever they stand', () => {
    expect(protectDashTaskIds(['node', 'mcp-tasks', 'watch', id])).toEqual(['node', 'mcp-tasks', 'watch', '--', id]);
    expect(protectDashTaskIds(['node', 'mcp-tasks', 'get', '--json', id, '--url', 'http://x/mcp'])).toEqual([
      'node',
      'mcp-tasks',
      'get',
      '--json',
      '--url',
      'http://x/mcp',
      '--',
      id,
    ]);
  });

  it('operation ids (same form) are moved behind "--" for ops show and ops reconcile, not for ops list', () => {
    expect(protectDashTaskIds(['node', 'mcp-tasks', 'ops', 'reconcile', id, '--data-dir', 'd'])).toEqual([
      'node',
      'mcp-tasks',
      'ops',
      'reconcile',
      '--data-dir',
      'd',
      '--',
      id,
    ]);
    expect(protectDashTaskIds(['node', 'mcp-tasks', 'ops', 'show', id])).toEqual(['node', 'mcp-tasks', 'ops', 'show', '--', id]);
    const list = ['node', 'mcp-tasks', 'ops', 'list', '--task', id];
    expect(protectDashTaskIds(list)).toEqual(list);
  });

  it('leave other commands, other arguments and an explicit "--" alone', () => {
    for (const argv of [
      ['node', 'mcp-tasks', 'call', 'analyze_logs', '--args', '{}'],
      ['node', 'mcp-tasks', 'cancel', '--', id],
      ['node', 'mcp-tasks', 'get', 'Zz9Yy8Xx7Ww6Vv5Uu4Tt3S'],
      ['node', 'mcp-tasks', 'get', '--json', 'x'],
    ]) {
      expect(protectDashTaskIds(argv)).toEqual(argv);
    }
  });
});
