import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

import { invalidParams } from '../core/errors.js';

/**
 * The one paging rule of every task list (v1 `tasks/list`, the viewer's browse): keyset pages on the creation
 * sequence `seq` (2025-11-25 R37), so pages stay correct while tasks are created; each read asks for one row more
 * than the page size to know whether another page follows; expired rows are left out of a page, but the cursor moves
 * past every row read, so a page of expired rows never stalls a walk. The requestor's cursor is opaque
 * ({@link CursorCodec}).
 */

/** One page of rows cut by {@link keysetPage}. */
export interface KeysetPage<T> {
  /** The visible rows of the page, in the order read (fewer than the page size when some had expired). */
  rows: T[];
  /** The `seq` the next page continues after (or before, newest first), or `undefined` when this was the last one. */
  nextSeq: number | undefined;
}

/** Rows to read for a page of `pageSize`: one more, to tell whether another page follows. */
export function rowsToRead(pageSize: number): number {
  return pageSize + 1;
}

/**
 * Cut a page of `pageSize` out of `read` (at most {@link rowsToRead} rows, in keyset order), keeping the rows
 * `visible` says are still there.
 */
export function keysetPage<T extends { seq: number }>(read: readonly T[], pageSize: number, visible: (row: T) => boolean): KeysetPage<T> {
  const page = read.slice(0, pageSize);
  const last = page[page.length - 1];
  return { rows: page.filter(visible), nextSeq: read.length > pageSize && last ? last.seq : undefined };
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Opaque keyset cursors for v1 `tasks/list` (2025-11-25 R37, R39): the last `seq` of a page, sealed with
 * AES-256-GCM under a key derived from the server secret, with the owner as associated data. A forged, altered or
 * borrowed cursor is rejected with `-32602`, and the client cannot read the sequence number (which counts every
 * tenant's tasks).
 */
export class CursorCodec {
  private readonly key: Buffer;

  constructor(secret: Buffer) {
    this.key = createHmac('sha256', secret).update('mcp-tasks tasks/list cursor v1').digest();
  }

  /** A cursor that continues after `seq` for `ownerKey`. */
  encode(seq: number, ownerKey: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(ownerKey, 'utf8'));
    const sealed = Buffer.concat([cipher.update(String(seq), 'utf8'), cipher.final()]);
    return Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url');
  }

  /**
   * The `seq` a cursor continues after.
   * @throws TasksError `-32602` "Invalid cursor" for anything not minted by {@link encode} for this owner.
   */
  decode(cursor: string, ownerKey: string): number {
    const raw = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url') : Buffer.alloc(0);
    // Only the one encoding we mint: base64url leaves spare bits in the last character, so other spellings of the
    // same bytes would otherwise pass (found by the hostile-input fuzzer).
    if (raw.length <= IV_BYTES + TAG_BYTES || raw.toString('base64url') !== cursor) throw invalidParams('Invalid cursor');
    let text: string;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(ownerKey, 'utf8'));
      decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
      text = Buffer.concat([decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw invalidParams('Invalid cursor');
    }
    const seq = Number(text);
    if (!Number.isSafeInteger(seq) || seq < 0) throw invalidParams('Invalid cursor');
    return seq;
  }
}
