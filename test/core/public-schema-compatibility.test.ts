import { describe, expect, expectTypeOf, it } from 'vitest';

import { judgeSchema, mayStartOn, type MigrationMark, readyOn, type SchemaCompatibility, type TaskStore } from '../../src/index.js';

// `TaskStore.schemaStatus()` returns a SchemaCompatibility: the package's public entry names that type, and gives a
// third-party store the rule (judgeSchema) to produce one from its own migrations' rows.

describe('the public entry exports the schema compatibility verdict and its rule', () => {
  it('SchemaCompatibility is what TaskStore.schemaStatus() resolves to; judgeSchema, mayStartOn and readyOn are callable from it', () => {
    expectTypeOf<Awaited<ReturnType<TaskStore['schemaStatus']>>>().toEqualTypeOf<SchemaCompatibility>();
    const known: MigrationMark[] = [{ version: 1, name: 'initial', breaking: false }];
    const verdict: SchemaCompatibility = judgeSchema([{ version: 1, name: 'initial', breaking: null }], known);
    expect(verdict).toEqual({ state: 'current', applied: 1, expected: 1, newer: [] });
    expect([mayStartOn(verdict), readyOn(verdict)]).toEqual([true, true]);
  });
});
