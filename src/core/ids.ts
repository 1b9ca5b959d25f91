import { randomBytes } from 'node:crypto';

/**
 * A new task id: 128 random bits from the CSPRNG, base64url without padding (22 characters).
 * Implements 2025-11-25 R13/R50 and SEP-2663 E44 (unguessable, not enumerable).
 */
export function newTaskId(): string {
  return randomBytes(16).toString('base64url');
}

/** Whether `value` has the shape of an id made by {@link newTaskId}. */
export function isTaskIdShape(value: string): boolean {
  return /^[A-Za-z0-9_-]{22}$/.test(value);
}

/** A new process instance id (for leases). */
export function newInstanceId(): string {
  return `i-${randomBytes(6).toString('hex')}`;
}
