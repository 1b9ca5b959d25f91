import { describe, expect, it } from 'vitest';

import { TasksError } from '../../src/core/errors.js';
import type { Logger } from '../../src/core/logger.js';
import { requestorTextOf, StoreError, type StoreErrorCode, toolFacingError } from '../../src/core/store-error.js';
import { storeErrorToWire, wireErrorOf } from '../../src/server/store-errors.js';

function recordingLogger(): Logger & { errors: unknown[] } {
  const errors: unknown[] = [];
  const logger = {
    errors,
    error: (obj: unknown) => void errors.push(obj),
    warn: () => undefined,
    info: () => undefined,
    debug: () => undefined,
    child: () => logger,
  };
  return logger as unknown as Logger & { errors: unknown[] };
}

describe('store errors on the wire (the one mapping, base §8)', () => {
  it('keeps the wire answers the port gave before it had its own codes: conflict -32602, everything else -32603', () => {
    const cases: Array<[StoreErrorCode, string, { code: number; message: string; data?: unknown }]> = [
      ['conflict', 'Idempotency key already used for another request', { code: -32602, message: 'Idempotency key already used for another request' }],
      // A fault's or a schema mismatch's message is the operator's (see the next test): the requestor gets "Task store failed".
      ['fault', 'Task store failed to write: disk I/O error', { code: -32603, message: 'Task store failed', data: { reason: 'store_failed' } }],
      [
        'invalid',
        'Task store refused transition to completed: outcome does not fit',
        { code: -32603, message: 'Task store refused transition to completed: outcome does not fit' },
      ],
      ['schema_mismatch', 'task store schema is version 9', { code: -32603, message: 'Task store failed', data: { reason: 'store_failed' } }],
      // No driver detail for an outage: host names, ports and addresses stay in the log.
      [
        'unavailable',
        'Task store unavailable: cannot connect (connect ECONNREFUSED 10.0.0.5:5432)',
        { code: -32603, message: 'Task store unavailable', data: { reason: 'store_unavailable' } },
      ],
    ];
    for (const [code, message, wire] of cases) expect(storeErrorToWire(new StoreError(code, message)), code).toEqual(wire);
  });

  it("a fault's driver detail and operator advice stay in the log; the requestor is told what failed (its requestorMessage)", () => {
    const logger = recordingLogger();
    const faults = [
      new StoreError('fault', 'Task store failed to write: duplicate key value violates unique constraint "tasks_pkey"', {
        requestorMessage: 'Task store failed to write',
      }),
      new StoreError('fault', 'cannot decrypt task data: key id 0a1b is not configured (add its key to MCP_TASKS_ENCRYPTION_KEYS_OLD)', {
        requestorMessage: "This server cannot decrypt this task's stored data",
      }),
      new StoreError('fault', 'Task store stopped: an fsync of its write-ahead log failed (EIO); the server process must be restarted'),
    ];
    expect(faults.map((fault) => wireErrorOf(fault, logger))).toEqual([
      { code: -32603, message: 'Task store failed to write', data: { reason: 'store_failed' } },
      { code: -32603, message: "This server cannot decrypt this task's stored data", data: { reason: 'store_failed' } },
      { code: -32603, message: 'Task store failed', data: { reason: 'store_failed' } },
    ]);
    expect(logger.errors).toEqual(faults.map((err) => expect.objectContaining({ err })));
    // Control: what the caller caused keeps its message, written for the caller.
    expect(wireErrorOf(new StoreError('invalid', 'Task store refused tool state: the key must have 1 to 200 characters'), logger)).toEqual({
      code: -32603,
      message: 'Task store refused tool state: the key must have 1 to 200 characters',
    });
  });

  it("what a tool gets tells the same when it crosses again (to a tool's thread): requestorTextOf is stable through toolFacingError, and no cause", () => {
    const errors = [
      new StoreError('fault', 'Task store failed to write: disk I/O error', { cause: new Error('EIO'), requestorMessage: 'Task store failed to write' }),
      new StoreError('fault', 'cannot decrypt …', { requestorMessage: "This server cannot decrypt this task's stored data" }),
      new StoreError('fault', 'Task store stopped: … must be restarted'),
      new StoreError('unavailable', 'Task store unavailable: cannot read (connect ECONNREFUSED 10.0.0.5:5432)'),
      new StoreError('invalid', 'Task store refused tool state: too large'),
      new StoreError('conflict', 'Idempotency key already used for another request'),
    ];
    for (const error of errors) {
      const once = toolFacingError(error);
      expect([once.code, requestorTextOf(once), requestorTextOf(toolFacingError(once)), once.cause]).toEqual([
        error.code,
        requestorTextOf(error),
        requestorTextOf(error),
        undefined,
      ]);
    }
  });

  it('logs store failures but not conflicts (the requestor caused those); passes protocol errors through; leaves other errors to the caller', () => {
    const logger = recordingLogger();
    expect(wireErrorOf(new StoreError('conflict', 'taken'), logger)).toEqual({ code: -32602, message: 'taken' });
    expect(logger.errors).toHaveLength(0);
    expect(wireErrorOf(new StoreError('unavailable', 'down'), logger)).toEqual({
      code: -32603,
      message: 'Task store unavailable',
      data: { reason: 'store_unavailable' },
    });
    expect(logger.errors).toHaveLength(1);
    expect(wireErrorOf(new TasksError(-32602, 'bad cursor'), logger)).toEqual({ code: -32602, message: 'bad cursor' });
    expect(wireErrorOf(new Error('boom'), logger)).toBeUndefined();
  });
});
