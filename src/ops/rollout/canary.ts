import { createHash } from 'node:crypto';

/** Hash buckets of the canary: a percentage is compared in hundredths (0.01 % steps). */
export const CANARY_BUCKETS = 10_000;

/** Where one tool's task mode is limited to (issue 15 item 7). */
export interface CanaryRule {
  /** Share of owners in the canary, 0–100. @defaultValue 0 */
  percent?: number;
  /** Tenants always in the canary. */
  tenants?: readonly string[];
}

/**
 * The stable bucket of an owner, 0…9999: the first 32 bits of SHA-256 of the owner key, mod 10000. The same owner
 * always gets the same bucket on every instance and after every restart, so raising the percentage only adds owners.
 */
export function canaryBucket(ownerKey: string): number {
  return createHash('sha256').update(ownerKey).digest().readUInt32BE(0) % CANARY_BUCKETS;
}

/** The tenant of an owner key `issuer|subject|tenant` (`''` for `anonymous` and keys without one). */
export function tenantOf(ownerKey: string): string {
  const parts = ownerKey.split('|');
  return parts.length >= 3 ? (parts.at(-1) as string) : '';
}

/** Whether the owner is in the canary: its tenant is allow-listed, or its bucket is below `percent` × 100. */
export function inCanary(rule: CanaryRule, ownerKey: string): boolean {
  const tenant = tenantOf(ownerKey);
  if (tenant !== '' && rule.tenants?.includes(tenant)) return true;
  return canaryBucket(ownerKey) < Math.round((rule.percent ?? 0) * (CANARY_BUCKETS / 100));
}
