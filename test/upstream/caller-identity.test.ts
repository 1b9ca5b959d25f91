import { describe, expect, it } from 'vitest';

import { ownerKeyOf } from '../../src/core/owner.js';
import { CALLER_HEADERS, callerHeaders } from '../../src/upstream/caller-identity.js';

/** Issue 28: the caller headers of an owner key, for HTTP upstreams configured to get them. */
describe('callerHeaders', () => {
  it('splits the owner key into its parts, undoing its encoding, and percent-encodes each for a header', () => {
    const key = ownerKeyOf({ issuer: 'https://issuer.test/a|b', subject: 'auth0|100%', tenant: 'acme é' });
    expect(callerHeaders(key)).toEqual({
      [CALLER_HEADERS.issuer]: encodeURIComponent('https://issuer.test/a|b'),
      [CALLER_HEADERS.subject]: encodeURIComponent('auth0|100%'),
      [CALLER_HEADERS.tenant]: encodeURIComponent('acme é'),
    });
    // A literal "%7C" in a part stays itself (decoded once, in one pass).
    const literal = callerHeaders(ownerKeyOf({ issuer: 'i', subject: 'x%7Cy', tenant: '' }));
    expect(decodeURIComponent(literal?.[CALLER_HEADERS.subject] ?? '')).toBe('x%7Cy');
    for (const value of Object.values(callerHeaders(key) ?? {})) expect(value).toMatch(/^[\x21-\x7e]*$/);
  });

  it('no headers without a caller or for the anonymous owner (no authentication)', () => {
    expect(callerHeaders(undefined)).toBeUndefined();
    expect(callerHeaders('anonymous')).toBeUndefined();
  });
});
