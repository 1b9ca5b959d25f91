import { describe, expect, it } from 'vitest';

import { ownerKeyOf } from '../../src/core/owner.js';
import { missingScopes, ScopePolicy } from '../../src/core/scopes.js';
import { Scope } from '../../src/protocol/scopes.js';

describe('ScopePolicy', () => {
  const policy = ScopePolicy.fromToolScopeSpecs(['analyze_logs=logs:read', 'audit_repository=repo:read', 'audit_repository=repo:audit']);

  it('parses --tool-scope (repeatable per tool) and lists supported and requestor scopes', () => {
    expect(policy.toolScopes('analyze_logs')).toEqual(['logs:read']);
    expect(policy.toolScopes('audit_repository')).toEqual(['repo:read', 'repo:audit']);
    expect(policy.toolScopes('other')).toEqual([]);
    expect(policy.supported()).toEqual(['tasks:read', 'tasks:cancel', 'tasks:answer', 'logs:read', 'repo:read', 'repo:audit', 'admin:read', 'admin:write']);
    expect(policy.requestorScopes()).not.toContain(Scope.AdminRead);
    expect(() => ScopePolicy.fromToolScopeSpecs(['x', 'y=', 'z=a"b'])).toThrow(/invalid --tool-scope "x".*"y=".*"z=a"b"/);
  });

  it('method-level scopes are judged from the message alone', () => {
    const cases: Array<[unknown, string[]]> = [
      [{ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'analyze_logs' } }, ['logs:read']],
      [{ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'plain' } }, []],
      [{ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { taskId: 'x' } }, ['tasks:read']],
      [{ jsonrpc: '2.0', id: 1, method: 'tasks/list' }, ['tasks:read']],
      [{ jsonrpc: '2.0', id: 1, method: 'tasks/result', params: {} }, ['tasks:read']],
      [{ jsonrpc: '2.0', id: 1, method: 'tasks/cancel', params: {} }, ['tasks:cancel']],
      [{ jsonrpc: '2.0', id: 1, method: 'tasks/update', params: {} }, ['tasks:answer']],
      [{ jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: { notifications: { taskIds: [] } } }, ['tasks:read']],
      [{ jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true } } }, []],
      [{ jsonrpc: '2.0', id: 'mcp-tasks-input:x', result: { action: 'accept' } }, ['tasks:answer']],
      [{ jsonrpc: '2.0', id: 1, method: 'tools/list' }, []],
      [{ jsonrpc: '2.0', id: 1, method: 'tools/call', params: 'nonsense' }, []],
      ['garbage', []],
      [null, []],
    ];
    for (const [message, expected] of cases) expect(policy.requiredForMessage(message), JSON.stringify(message)).toEqual(expected);
    expect(missingScopes(['tasks:read'], ['tasks:read', 'logs:read'])).toEqual(['logs:read']);
  });
});

describe('ownerKeyOf', () => {
  it('is issuer|subject|tenant, verbatim for parts without | or %', () => {
    expect(ownerKeyOf({ issuer: 'https://as', subject: 'alice', tenant: 'acme' })).toBe('https://as|alice|acme');
  });

  it('is injective when parts contain | or % (JWT subjects such as auth0|123)', () => {
    const keys = [
      { issuer: 'a', subject: 'b|c', tenant: 'd' },
      { issuer: 'a', subject: 'b', tenant: 'c|d' },
      { issuer: 'a|b', subject: 'c', tenant: 'd' },
      { issuer: 'a', subject: 'b%7Cc', tenant: 'd' },
      { issuer: 'a', subject: 'b', tenant: '' },
      { issuer: 'a', subject: 'b|', tenant: '' },
    ].map(ownerKeyOf);
    expect(new Set(keys).size).toBe(keys.length);
    // Negative control: plain concatenation would collide.
    expect('a|b|c|d').toBe(['a', 'b|c', 'd'].join('|'));
    expect('a|b|c|d').toBe(['a', 'b', 'c|d'].join('|'));
  });
});
