/**
 * toProtocolError recognises the MCP SDK's ProtocolError by the SDK's own brand, without importing the SDK (so a
 * tool thread does not load it). These tests pin that check against the SDK's real classes: a new SDK that changes
 * its brand fails here, not in production.
 */
import { ProtocolError as ClientProtocolError } from '@modelcontextprotocol/client';
import { ProtocolError, UrlElicitationRequiredError } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';

import { TasksError } from '../../src/core/errors.js';
import { toProtocolError } from '../../src/core/protocol-errors.js';

describe('toProtocolError', () => {
  it("maps the SDK's ProtocolError (server and client bundles) and its subclasses to their code, message and data", () => {
    expect(toProtocolError(new ProtocolError(-32602, 'bad argument', { field: 'x' }))).toEqual({ code: -32602, message: 'bad argument', data: { field: 'x' } });
    expect(toProtocolError(new ClientProtocolError(-32601, 'no such method'))).toEqual({ code: -32601, message: 'no such method' });
    const url = new UrlElicitationRequiredError([{ mode: 'url', message: 'sign in', url: 'https://example.test/x', elicitationId: 'e1' }]);
    // Recognised (not undefined); its -32042 sits in the block 2026-07-28 reserves without defining, hence -32603.
    expect(toProtocolError(url)).toMatchObject({ code: -32603, message: url.message });
  });

  it('maps our TasksError, and a reserved code the spec does not define to -32603 (base §8)', () => {
    expect(toProtocolError(new TasksError(-32602, 'bad'))).toEqual({ code: -32602, message: 'bad' });
    expect(toProtocolError(new ProtocolError(-32050, 'reserved'))?.code).toBe(-32603);
  });

  it('negative control: an error that merely looks like one (a numeric code, even the class name) is no wire error', () => {
    class ProtocolErrorLookalike extends Error {
      code = -32602;
    }
    Object.defineProperty(ProtocolErrorLookalike, 'name', { value: 'ProtocolError' });
    expect(toProtocolError(new ProtocolErrorLookalike('forged'))).toBeUndefined();
    expect(toProtocolError(Object.assign(new Error('http'), { code: 500 }))).toBeUndefined();
    expect(toProtocolError({ code: -32602, message: 'plain object' })).toBeUndefined();
    expect(toProtocolError(undefined)).toBeUndefined();
  });
});
