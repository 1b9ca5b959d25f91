import { describe, expect, it } from 'vitest';

import { decideRoute } from '../../src/client/router.js';
import { buildCapabilityManifest, type CapabilityManifest } from '../../src/protocol/manifest.js';

const AT = '2026-12-01T00:00:00.000Z';
const TOOLS = [
  { name: 'sync_only' },
  { name: 'either', execution: { taskSupport: 'optional' } },
  { name: 'task_only', execution: { taskSupport: 'required' } },
];
const v1 = (tasks: Record<string, unknown>): CapabilityManifest =>
  buildCapabilityManifest({
    protocolVersion: '2025-11-25',
    capabilities: { tasks: { ...tasks, requests: { tools: { call: {} } } } },
    session: { kind: 'initialize', sessionId: null, at: AT },
    tools: TOOLS,
  });
const v2 = buildCapabilityManifest({
  protocolVersion: '2026-07-28',
  capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } },
  session: { kind: 'discover', at: AT },
  tools: TOOLS,
});
const none = buildCapabilityManifest({ protocolVersion: '2026-07-28', capabilities: { tools: {} }, session: { kind: 'discover', at: AT }, tools: TOOLS });

describe('router: decide before sending', () => {
  it('required: a task only where the tool and connection allow one', () => {
    expect(decideRoute(v1({}), 'either', 'required', {}, false)).toEqual({ route: 'task' });
    expect(decideRoute(v1({}), 'task_only', 'required', {}, false)).toEqual({ route: 'task' });
    expect(decideRoute(v1({}), 'sync_only', 'required', {}, false)).toEqual({
      route: 'fallback',
      missing: ['tool sync_only does not run as a task (taskSupport: forbidden)'],
    });
    expect(decideRoute(v2, 'sync_only', 'required', {}, false)).toEqual({ route: 'task' }); // v2: the server decides
    expect(decideRoute(none, 'either', 'required', {}, false)).toEqual({ route: 'fallback', missing: ['MCP 2026-07-28 offers no tasks'] });
  });

  it('needs are compared with the task operations (and input with the client’s own handler)', () => {
    expect(decideRoute(v1({}), 'either', 'preferred', { cancel: true, list: true }, false)).toEqual({
      route: 'fallback',
      missing: ['tasks/cancel is not offered (no tasks.cancel capability)', 'tasks/list is not offered (servers offer it only with authentication)'],
    });
    expect(decideRoute(v1({ cancel: {}, list: {} }), 'either', 'preferred', { cancel: true, list: true }, false)).toEqual({ route: 'task' });
    expect(decideRoute(v2, 'either', 'required', { list: true }, true)).toMatchObject({
      missing: ['tasks/list does not exist in the 2026-07-28 Tasks Extension'],
    });
    expect(decideRoute(v2, 'either', 'required', { input: true }, false)).toMatchObject({ missing: ['this client has no input handler (onInput)'] });
    expect(decideRoute(v2, 'either', 'required', { input: true, cancel: true }, true)).toEqual({ route: 'task' });
  });

  it('forbidden: inline, except for a tool that runs only as a task', () => {
    expect(decideRoute(v1({}), 'either', 'forbidden', {}, false)).toEqual({ route: 'sync' });
    expect(decideRoute(v2, 'either', 'forbidden', { cancel: true }, false)).toEqual({ route: 'sync' });
    expect(decideRoute(v1({}), 'task_only', 'forbidden', {}, false)).toEqual({
      route: 'fallback',
      missing: ['tool task_only runs only as a task (taskSupport: required), and the policy forbids tasks'],
    });
  });
});
