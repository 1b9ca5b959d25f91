import { describe, expect, it } from 'vitest';
import { z } from 'zod';

import { defineTool, textResult } from '../../src/core/tool.js';
import { ToolRegistry } from '../../src/core/tool-registry.js';

const tool = (name: string, extra: { elicits?: boolean; idempotent?: boolean; journaled?: boolean } = {}) =>
  defineTool({
    name,
    description: name,
    execution: 'task-optional',
    inputSchema: z.object({}),
    ...extra,
    async run() {
      return textResult('ok');
    },
  });

describe('tool registry (one check for the service and the worker)', () => {
  it('refuses a duplicate name and an elicting tool that is not safe to re-run, with -32602', () => {
    expect(() => new ToolRegistry([tool('a'), tool('a')])).toThrow(expect.objectContaining({ code: -32602, message: 'duplicate tool name: a' }));
    expect(() => new ToolRegistry([tool('ask', { elicits: true })])).toThrow(/neither idempotent nor journaled/);
    const registry = new ToolRegistry([tool('a'), tool('ask', { elicits: true, journaled: true }), tool('again', { elicits: true, idempotent: true })]);
    expect(registry.list().map((entry) => entry.name)).toEqual(['a', 'ask', 'again']);
    expect(registry.get('ask')?.name).toBe('ask');
    expect(registry.get('missing')).toBeUndefined();
  });
});
