import { describe, expect, it } from 'vitest';

import { type AppliedMigration, judgeSchema, mayStartOn, type MigrationMark, readyOn } from '../../src/core/schema-compatibility.js';
import { POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';

// The one rule start-up, /readyz and doctor apply to a schema (rolling deploys: an older process on a schema newer
// code migrated). Each verdict here is also what the stores' tests see through real databases.

const KNOWN: MigrationMark[] = [
  { version: 1, name: 'initial', breaking: false },
  { version: 2, name: 'second', breaking: false },
];
const row = (version: number, name: string, breaking: boolean | null = false): AppliedMigration => ({ version, name, breaking });
const judge = (...rows: AppliedMigration[]) => judgeSchema(rows, KNOWN);

describe('judgeSchema', () => {
  it('empty, older and current schemas: this code starts on each; only a current one is ready', () => {
    expect(judge()).toEqual({ state: 'empty', applied: 0, expected: 2, newer: [] });
    expect(judge(row(1, 'initial'))).toEqual({ state: 'older', applied: 1, expected: 2, newer: [] });
    expect(judge(row(2, 'second'), row(1, 'initial'))).toEqual({ state: 'current', applied: 2, expected: 2, newer: [] });
    expect([judge(), judge(row(1, 'initial')), judge(row(1, 'initial'), row(2, 'second'))].map((s) => [mayStartOn(s), readyOn(s)])).toEqual([
      [true, false],
      [true, false],
      [true, true],
    ]);
  });

  it('newer versions all marked compatible: starts and is ready, naming them (rolling deploy, rollback)', () => {
    const schema = judge(row(1, 'initial'), row(2, 'second'), row(3, 'additive'), row(4, 'another'));
    expect(schema).toEqual({ state: 'newer-compatible', applied: 4, expected: 2, newer: [3, 4] });
    expect(mayStartOn(schema)).toBe(true);
    expect(readyOn(schema)).toBe(true);
  });

  it('one newer migration marked breaking, even below compatible ones: neither starts nor is ready, and the problem names it', () => {
    const schema = judge(row(1, 'initial'), row(2, 'second'), row(3, 'drop a column', true), row(4, 'additive'));
    expect(schema).toMatchObject({ state: 'newer-breaking', applied: 4, expected: 2, newer: [3, 4] });
    expect(schema.problem).toBe(
      'schema version 4 is newer than this mcp-tasks knows (2), and migration 3 ("drop a column") is breaking for older code: upgrade mcp-tasks',
    );
    expect([mayStartOn(schema), readyOn(schema)]).toEqual([false, false]);
  });

  it('a newer row without a mark (written by hand, or by code before the marks) counts as breaking', () => {
    const schema = judge(row(1, 'initial'), row(2, 'second'), row(99, 'from the future', null));
    expect(schema.state).toBe('newer-breaking');
    expect(schema.problem).toMatch(/migration 99 \("from the future"\) is not marked compatible with older code: upgrade mcp-tasks$/);
    // Unmarked rows this code knows are fine: their marks are this code's own.
    expect(judge(row(1, 'initial', null), row(2, 'second', null)).state).toBe('current');
  });

  it('a known version missing below the newest applied one is foreign (incomplete), not current — migrate would skip it for good', () => {
    const three: MigrationMark[] = [...KNOWN, { version: 3, name: 'third', breaking: false }];
    const gap = judgeSchema([row(1, 'initial'), row(3, 'third')], three);
    expect(gap).toEqual({
      state: 'foreign',
      applied: 3,
      expected: 3,
      newer: [],
      problem:
        'schema version 2 ("second") is missing below the newest applied version (3): its schema_migrations is incomplete or was not written by mcp-tasks',
    });
    expect([mayStartOn(gap), readyOn(gap)]).toEqual([false, false]);
    // Also on a newer schema, and with the lowest version missing.
    expect(judge(row(2, 'second'), row(3, 'additive')).problem).toMatch(/^schema version 1 \("initial"\) is missing below/);
    // A newer breaking migration is said first (upgrading is the step either way).
    expect(judge(row(2, 'second'), row(3, 'drop a column', true)).state).toBe('newer-breaking');
    // Control: the same versions without the gap, and a schema that simply stops early.
    expect(judgeSchema([row(1, 'initial'), row(2, 'second'), row(3, 'third')], three).state).toBe('current');
    expect(judgeSchema([row(1, 'initial'), row(2, 'second')], three).state).toBe('older');
  });

  it('the name check stays: a known version under another name is foreign, even on a newer compatible schema', () => {
    const schema = judge(row(1, 'someone else'), row(2, 'second'), row(3, 'additive'));
    expect(schema).toMatchObject({ state: 'foreign', applied: 3 });
    expect(schema.problem).toBe('schema version 1 is "someone else", expected "initial": its schema_migrations was not written by mcp-tasks');
    expect([mayStartOn(schema), readyOn(schema)]).toEqual([false, false]);
  });
});

describe('the marks are no numbered migration (the previous version stays ready on the schema this code leaves)', () => {
  // A numbered marks migration made every process of the version before the marks (PostgreSQL 1–14, SQLite 1–13)
  // unready the moment the first process of this version started: each store's migrate adds the column instead.
  it.each([
    ['PostgreSQL', POSTGRES_MIGRATIONS, 14],
    ['SQLite', MIGRATIONS, 13],
  ] as const)('%s', (_store, migrations, previous) => {
    expect(migrations.map((m) => m.name)).not.toContain('compatibility marks');
    expect(migrations.length).toBeGreaterThanOrEqual(previous);
    expect(migrations.map((m) => m.version)).toEqual(migrations.map((_, i) => i + 1));
  });
});
