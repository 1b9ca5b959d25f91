import { describe, expect, it } from 'vitest';

import { serializeError } from '../../src/cli/logger.js';
import { TasksError } from '../../src/core/errors.js';
import { toProtocolError } from '../../src/core/protocol-errors.js';
import { sanitizeModelText, settleExecution } from '../../src/core/tool-outcome.js';

const KEY = 'AKIAIOSFODNN7EXAMPLE';
const STRIPE = 'sk_live_4eC39HqLyjWDarjtT1zdp7d1';

describe('secrets never reach statusMessage, stored errors or logs', () => {
  it('statusMessage set by a tool is redacted', () => {
    const message = sanitizeModelText(`uploading with ${KEY} and ${STRIPE}`);
    expect(message).not.toContain(KEY);
    expect(message).not.toContain(STRIPE);
    expect(message).toMatch(/^uploading with /);
  });

  it('a protocol error a tool throws is stored and shown with its secrets redacted', () => {
    const error = toProtocolError(new TasksError(-32603, `upstream refused key ${KEY}`))!;
    const settled = settleExecution('v2', { kind: 'protocol_error', error });
    expect(JSON.stringify(settled)).not.toContain(KEY);
    expect(settled.outcome).toMatchObject({ kind: 'error', error: { code: -32603 } });
  });

  it('logged errors have secrets redacted from message and stack', () => {
    const serialized = JSON.stringify(serializeError(new Error(`db connect failed password=Hunter2Hunter2 token ${STRIPE}`)));
    expect(serialized).not.toContain(STRIPE);
    expect(serialized).not.toContain('Hunter2Hunter2');
    expect(serialized).toContain('db connect failed');
  });
});
