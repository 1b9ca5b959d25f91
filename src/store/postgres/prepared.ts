import { createHash } from 'node:crypto';

import type pg from 'pg';

/**
 * Named (prepared) statements for the store's parameterised SQL (issue 25). An unnamed statement makes the server
 * parse and plan its text on every execution — the claim, create and transition statements are CTEs of several
 * hundred characters, run several times per round trip — where a named one is parsed once per connection and then
 * only bound and executed (PostgreSQL may keep a generic plan after five runs). Names are a hash of the text, so one
 * text has one name in every process and a connection never sees a name reused for another text. Statements without
 * parameters (`BEGIN`, `COMMIT`, savepoints) stay on the simple protocol.
 *
 * Poolers: a transaction-mode pooler needs protocol-level prepared statements (PgBouncer 1.21+ with
 * `max_prepared_statements`); docs/operations/scaling.md says so.
 */
const names = new Map<string, string>();
/** Distinct texts given a name; beyond, statements run unnamed (bounds server memory if a text were ever built per call). */
const MAX_NAMED = 512;

/** `text` with `values` as a query config: named when it has parameters (see the module comment). */
export function statement(text: string, values: readonly unknown[] | undefined): pg.QueryConfig {
  if (values === undefined || values.length === 0) return { text };
  let name = names.get(text);
  if (name === undefined) {
    if (names.size >= MAX_NAMED) return { text, values: values as unknown[] };
    name = `mcp_tasks_${createHash('sha256').update(text).digest('base64url').slice(0, 22)}`;
    names.set(text, name);
  }
  return { name, text, values: values as unknown[] };
}
