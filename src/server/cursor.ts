import { createHmac, timingSafeEqual } from 'node:crypto';
import { invalidParams } from '../core/errors.js';

/**
 * Opaque keyset cursors for v1 `tasks/list` (2025-11-25 R37, R39): the last `seq` of a page, HMAC-signed with the
 * server secret and bound to the owner, so a forged, altered or borrowed cursor is rejected with `-32602`.
 */
export class CursorCodec {
  constructor(private readonly secret: Buffer) {}

  /** A cursor that continues after `seq` for `ownerKey`. */
  encode(seq: number, ownerKey: string): string {
    const payload = Buffer.from(String(seq), 'utf8').toString('base64url');
    return `${payload}.${this.sign(payload, ownerKey)}`;
  }

  /**
   * The `seq` a cursor continues after.
   * @throws TasksError `-32602` "Invalid cursor" for anything not minted by {@link encode} for this owner.
   */
  decode(cursor: string, ownerKey: string): number {
    const [payload, signature, extra] = cursor.split('.');
    if (!payload || !signature || extra !== undefined) throw invalidParams('Invalid cursor');
    const expected = Buffer.from(this.sign(payload, ownerKey), 'base64url');
    const given = Buffer.from(signature, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalidParams('Invalid cursor');
    const seq = Number(Buffer.from(payload, 'base64url').toString('utf8'));
    if (!Number.isSafeInteger(seq) || seq < 0) throw invalidParams('Invalid cursor');
    return seq;
  }

  private sign(payload: string, ownerKey: string): string {
    return createHmac('sha256', this.secret).update(`tasks/list\n${ownerKey}\n${payload}`).digest('base64url');
  }
}
