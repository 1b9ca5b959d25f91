/** Recently formatted instants: a polled task repeats its two timestamps on every answer. */
const recent = new Map<number, string>();
const RECENT_LIMIT = 4096;

/** Epoch milliseconds → ISO 8601 UTC string, the wire form of `createdAt` / `lastUpdatedAt` (R17). */
export function isoTime(epochMs: number): string {
  let text = recent.get(epochMs);
  if (text === undefined) {
    text = new Date(epochMs).toISOString();
    if (recent.size >= RECENT_LIMIT) recent.clear();
    recent.set(epochMs, text);
  }
  return text;
}
