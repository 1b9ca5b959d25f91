import { randomBytes } from 'node:crypto';

const POOL_BYTES = 16 * 256;
let pool = Buffer.alloc(0);
let offset = POOL_BYTES;

/** Letters and digits: the first character of an id (62). */
const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** The base64url alphabet (64): every other character. */
const BASE64URL = `${ALPHANUMERIC}-_`;

/**
 * A new task id (also an operation id): 128 random bits from the CSPRNG in 22 base64url characters, the first of which
 * is a letter or a digit. Implements 2025-11-25 R13/R50 and SEP-2663 E44 (unguessable, not enumerable). The bytes come
 * from the CSPRNG in blocks of 256 ids (one system call instead of one per task); each id's 16 bytes are used once.
 */
export function newTaskId(): string {
  if (offset + 16 > POOL_BYTES) {
    pool = randomBytes(POOL_BYTES);
    offset = 0;
  }
  const id = taskIdOf(pool.subarray(offset, offset + 16));
  offset += 16;
  return id;
}

/**
 * The id of 16 random bytes. Plain base64url would begin with "-" for one id in 64, which every command line that
 * parses its arguments (ours, `mcpc`, `mcpdo`, a shell script's `getopts`) takes for an option. So the 128-bit value
 * `v` is written as `v mod 62` in letters and digits, then `⌊v / 62⌋` (below 2¹²³, so 21 digits of 6 bits suffice;
 * the last is A–E) in base64url, least significant digit first: one-to-one, so every id still carries all 128 bits,
 * and the shape stays that of {@link isTaskIdShape}.
 * @param bytes - exactly 16 bytes.
 */
export function taskIdOf(bytes: Uint8Array): string {
  if (bytes.length !== 16) throw new RangeError(`a task id takes 16 bytes, not ${bytes.length}`);
  let value = BigInt(`0x${Buffer.from(bytes).toString('hex')}`);
  let id = ALPHANUMERIC[Number(value % 62n)] as string;
  value /= 62n;
  for (let digit = 0; digit < 21; digit += 1) {
    id += BASE64URL[Number(value & 63n)] as string;
    value >>= 6n;
  }
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
