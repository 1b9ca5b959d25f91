import { createHash } from 'node:crypto';

/** `value` with every object's keys sorted, recursively: one spelling per JSON value (arrays keep their order). */
export function canonicalJson(value: unknown): string {
  const canonical = (item: unknown): unknown =>
    Array.isArray(item)
      ? item.map(canonical)
      : typeof item === 'object' && item !== null
        ? Object.fromEntries(
            Object.keys(item)
              .sort()
              .map((key) => [key, canonical((item as Record<string, unknown>)[key])]),
          )
        : item;
  return JSON.stringify(canonical(value)) ?? 'null';
}

/** SHA-256 of {@link canonicalJson} of `value`, base64url (43 characters). */
export function digestOf(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('base64url');
}

/**
 * The digest that identifies a `tools/call` for its idempotency key and in the audit trail: the tool and its
 * arguments, canonical (key order never matters), never the arguments themselves.
 */
export function requestDigest(toolName: string, args: unknown): string {
  return digestOf({ tool: toolName, arguments: args ?? {} });
}
