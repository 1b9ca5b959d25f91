import { randomBytes } from 'node:crypto';

const POOL_BYTES = 16 * 256;
let pool = Buffer.alloc(0);
let offset = POOL_BYTES;

/**
 * A new task id: 128 random bits from the CSPRNG, base64url without padding (22 characters).
 * Implements 2025-11-25 R13/R50 and SEP-2663 E44 (unguessable, not enumerable). The bytes come from the CSPRNG in
 * blocks of 256 ids (one system call instead of one per task); each id's 16 bytes are used once.
 */
export function newTaskId(): string {
  if (offset + 16 > POOL_BYTES) {
    pool = randomBytes(POOL_BYTES);
    offset = 0;
  }
  const id = pool.toString('base64url', offset, offset + 16);
  offset += 16;
  return id;
}

/** Whether `value` has the shape of an id made by {@link newTaskId}. */
export function isTaskIdShape(value: string): boolean {
  return /^[A-Za-z0-9_-]{22}$/.test(value);
}

/** A new process instance id (for leases). */
export function newInstanceId(): string {
  return `i-${randomBytes(6).toString('hex')}`;
}
