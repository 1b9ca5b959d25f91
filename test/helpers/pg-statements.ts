import pg from 'pg';
import { vi } from 'vitest';

/**
 * The statements `work` sends through any pg client of this process (texts, whitespace collapsed, at most `width`
 * characters each, in order): what a PostgreSQL operation costs in round trips, counted at the driver (issue 25).
 */
export async function statementsOf(work: () => Promise<unknown>, width = 60): Promise<string[]> {
  const sent: string[] = [];
  const query = pg.Client.prototype.query;
  const spy = vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
    const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text;
    sent.push(String(text).replace(/\s+/g, ' ').trim().slice(0, width));
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  });
  try {
    await work();
  } finally {
    spy.mockRestore();
  }
  return sent;
}
