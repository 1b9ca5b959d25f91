import { ProtocolError } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';

import { unplacedQuestion, upstreamQuestion } from '../../src/upstream/elicitation.js';

/** Issue 28: an upstream's `elicitation/create` params as our question, and what is refused to the upstream. */
describe('upstreamQuestion', () => {
  const schema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };

  it('a form question keeps its schema and carries the upstream name before its message', () => {
    expect(upstreamQuestion('everything', { message: 'Your name?', requestedSchema: schema })).toEqual({
      mode: 'form',
      message: 'everything: Your name?',
      requestedSchema: schema,
    });
    expect(upstreamQuestion('u', { mode: 'form', message: 'm', requestedSchema: schema })).toMatchObject({ mode: 'form' });
  });

  it('a URL question keeps its http(s) url and elicitationId', () => {
    expect(upstreamQuestion('u', { mode: 'url', message: 'Sign in', url: 'https://example.test/auth', elicitationId: 'e1' })).toEqual({
      mode: 'url',
      message: 'u: Sign in',
      url: 'https://example.test/auth',
      elicitationId: 'e1',
    });
  });

  it('refuses with -32602 what is not a question: no message, no schema, a URL that is not http(s), no params', () => {
    for (const params of [
      undefined,
      null,
      { requestedSchema: schema },
      { message: 'm' },
      { message: 'm', requestedSchema: [] },
      { mode: 'url', message: 'm', url: 'javascript:alert(1)', elicitationId: 'e' },
      { mode: 'url', message: 'm', url: 'https://example.test' },
      // Review of issue 28: schemas no answer could be checked against (the answer check threw on every accepted
      // answer, so the task could only be declined, cancelled or left to time out, with the upstream call open).
      { message: 'm', requestedSchema: { type: 'object', properties: { name: { type: 'nonsense' } } } },
      { message: 'm', requestedSchema: { $ref: 'https://example.test/schema.json' } },
    ]) {
      let caught: unknown;
      try {
        upstreamQuestion('u', params);
      } catch (error) {
        caught = error;
      }
      expect(caught, JSON.stringify(params)).toBeInstanceOf(ProtocolError);
      expect((caught as ProtocolError).code).toBe(-32602);
    }
  });

  it('caps a long message', () => {
    const question = upstreamQuestion('u', { message: 'x'.repeat(10_000), requestedSchema: schema });
    expect(question.message.length).toBe('u: '.length + 2000);
  });

  it('the refusal of an unplaced question says why, for none and for several calls in flight', () => {
    expect(unplacedQuestion(0).message).toContain('outside any tools/call');
    expect(unplacedQuestion(2).message).toContain('2 calls are in flight on this connection');
  });
});
