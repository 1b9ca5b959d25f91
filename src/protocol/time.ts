/** Epoch milliseconds → ISO 8601 UTC string, the wire form of `createdAt` / `lastUpdatedAt` (R17). */
export function isoTime(epochMs: number): string {
  return new Date(epochMs).toISOString();
}
