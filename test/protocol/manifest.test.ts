import { describe, expect, it } from 'vitest';

import { buildCapabilityManifest, canonicalJson, capabilitiesDigest, type ManifestInput, taskGenerationOf, toolTaskMode } from '../../src/protocol/manifest.js';

const AT = '2026-12-01T00:00:00.000Z';
const v1Input = (capabilities: Record<string, unknown>): ManifestInput => ({
  protocolVersion: '2025-11-25',
  capabilities,
  serverInfo: { name: 's', version: '1' },
  session: { kind: 'initialize', sessionId: 'sess', at: AT },
  tools: [{ name: 'b_required', execution: { taskSupport: 'required' } }, { name: 'a_plain' }, { name: 'c_optional', execution: { taskSupport: 'optional' } }],
});

describe('capability manifest (protocol/manifest)', () => {
  it('canonical JSON sorts keys at every level, keeps array order, drops undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: undefined, x: null }], c: 'x' } })).toBe('{"a":{"c":"x","d":[2,{"x":null,"z":1}]},"b":1}');
  });

  it('the digest depends on the capabilities, not on key order (and changes with any capability)', () => {
    const one = capabilitiesDigest({ tools: {}, tasks: { cancel: {}, requests: { tools: { call: {} } } } });
    const same = capabilitiesDigest({ tasks: { requests: { tools: { call: {} } }, cancel: {} }, tools: {} });
    const other = capabilitiesDigest({ tools: {}, tasks: { requests: { tools: { call: {} } } } });
    expect(one).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(same).toBe(one);
    expect(other).not.toBe(one);
  });

  it('the generation comes from the protocol version and the capability, never from the server name', () => {
    expect(taskGenerationOf('2025-11-25', { tasks: { requests: { tools: { call: {} } } } })).toBe('v1');
    expect(taskGenerationOf('2025-11-25', { tasks: {} })).toBeNull();
    expect(taskGenerationOf('2025-06-18', { tasks: { requests: { tools: { call: {} } } } })).toBeNull(); // no tasks before 2025-11-25
    expect(taskGenerationOf('2026-07-28', { extensions: { 'io.modelcontextprotocol/tasks': {} } })).toBe('v2');
    expect(taskGenerationOf('2026-07-28', { tasks: { requests: { tools: { call: {} } } } })).toBeNull();
  });

  it('v1: operations from tasks.cancel / tasks.list, tool modes from taskSupport (absent = forbidden), tools sorted', () => {
    const manifest = buildCapabilityManifest(v1Input({ tasks: { cancel: {}, requests: { tools: { call: {} } } } }));
    expect(manifest).toEqual({
      manifestVersion: 1,
      protocolVersion: '2025-11-25',
      generation: 'v1',
      server: { name: 's', version: '1' },
      session: { kind: 'initialize', sessionId: 'sess', at: AT },
      capabilitiesDigest: capabilitiesDigest({ tasks: { cancel: {}, requests: { tools: { call: {} } } } }),
      taskOperations: ['cancel', 'get', 'result'],
      idempotencyKeys: false,
      tools: [
        { name: 'a_plain', taskMode: 'forbidden' },
        { name: 'b_required', taskMode: 'required' },
        { name: 'c_optional', taskMode: 'optional' },
      ],
    });
    expect(buildCapabilityManifest(v1Input({ tasks: { list: {}, requests: { tools: { call: {} } } } })).taskOperations).toEqual(['get', 'list', 'result']);
    expect(toolTaskMode(manifest, 'not_listed')).toBe('forbidden');
    // The manifest is plain JSON: it survives serialisation unchanged (the server's `manifest` command prints the same type).
    expect(JSON.parse(JSON.stringify(manifest))).toEqual(manifest);
  });

  it('v2: get/update/cancel/listen, every tool "server decides" (a 2026-07-28 Tool has no execution field)', () => {
    const manifest = buildCapabilityManifest({
      protocolVersion: '2026-07-28',
      capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } },
      session: { kind: 'discover', at: AT },
      tools: [{ name: 'x', execution: { taskSupport: 'forbidden' } }],
    });
    expect(manifest).toMatchObject({
      generation: 'v2',
      server: null,
      taskOperations: ['cancel', 'get', 'listen', 'update'],
      tools: [{ name: 'x', taskMode: 'server-decides' }],
    });
    expect(toolTaskMode(manifest, 'anything')).toBe('server-decides');
  });

  it('idempotency keys count only when declared in the generation’s own place (v2 extensions, v1 experimental)', () => {
    const v2 = (capabilities: Record<string, unknown>) =>
      buildCapabilityManifest({ protocolVersion: '2026-07-28', capabilities, session: { kind: 'discover', at: AT }, tools: [] });
    expect(v2({ extensions: { 'io.modelcontextprotocol/tasks': {}, 'dev.mcp-tasks/idempotency': {} } }).idempotencyKeys).toBe(true);
    expect(v2({ extensions: { 'io.modelcontextprotocol/tasks': {} }, experimental: { 'dev.mcp-tasks/idempotency': {} } }).idempotencyKeys).toBe(false);
    expect(
      buildCapabilityManifest(v1Input({ tasks: { requests: { tools: { call: {} } } }, experimental: { 'dev.mcp-tasks/idempotency': {} } })).idempotencyKeys,
    ).toBe(true);
    expect(buildCapabilityManifest(v1Input({ experimental: { 'dev.mcp-tasks/idempotency': {} } })).idempotencyKeys).toBe(false); // no tasks, no keys
  });

  it('a server without tasks: no operations, every tool forbidden', () => {
    const manifest = buildCapabilityManifest(v1Input({ tools: {} }));
    expect([manifest.generation, manifest.taskOperations, manifest.tools.map((tool) => tool.taskMode)]).toEqual([
      null,
      [],
      ['forbidden', 'forbidden', 'forbidden'],
    ]);
  });
});
