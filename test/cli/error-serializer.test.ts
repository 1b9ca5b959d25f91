/**
 * What the CLI's log says of an error with causes (stop 46): each cause's words once. A `StoreError` quotes its
 * driver's error in its own message, and pino's serializer appended the cause's message again ("…disk is full:
 * database or disk is full: database or disk is full").
 */
import { describe, expect, it } from 'vitest';

import { serializeError } from '../../src/cli/logger.js';
import { StoreError } from '../../src/core/store-error.js';

const message = (error: Error): unknown => (serializeError(error) as { message: unknown }).message;

describe("the CLI log's error message", () => {
  it("names a cause the error's message already quotes once", () => {
    const driver = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    const error = new StoreError('fault', 'Task store failed to commit: database or disk is full', { cause: driver, outOfSpace: true });
    expect(message(error)).toBe('Task store failed to commit: database or disk is full');
  });

  it('control: a cause with words of its own is still appended, down the chain', () => {
    const root = new Error('connect ECONNREFUSED 127.0.0.1:5432');
    const middle = new Error('pool could not connect', { cause: root });
    const error = new StoreError('unavailable', 'Task store unavailable: cannot read a task', { cause: middle });
    expect(message(error)).toBe('Task store unavailable: cannot read a task: pool could not connect: connect ECONNREFUSED 127.0.0.1:5432');
  });

  it('a circular cause chain ends', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    expect(message(a)).toBe('a: b');
  });
});
