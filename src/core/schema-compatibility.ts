/**
 * Whether this code can run on a store's schema: the one rule that start-up (each store's `migrate`), readiness
 * (`StoreMaintenance.schemaStatus`, `/readyz`) and `mcp-tasks doctor` apply, so the three never disagree.
 *
 * During a rolling deploy the first new process migrates the shared database while older processes still run on it,
 * and a rollback starts older code on the schema the newer code left. Each migration therefore declares whether code
 * that predates it can keep running on the schema it leaves ({@link MigrationMark.breaking}), and the store records
 * that declaration in `schema_migrations.breaking` when it applies the migration — so an older process, which knows
 * nothing else about a newer migration, can read it there. A schema newer than this code is fine when every newer
 * migration is marked not breaking, and refused otherwise (also when a newer row carries no mark: a row nobody
 * declared compatible is assumed breaking). The column is not a numbered migration (each store's `migrate` adds it
 * when missing), so processes of the version before the marks stay ready on the schema this version leaves; they
 * cannot read marks, though, and refuse any newer schema — so the first later version that adds a numbered migration
 * needs every process on at least the marks' version first (docs/operations/upgrades.md).
 */

import { gonePredecessor } from './local-process.js';
import { StoreError } from './store-error.js';

/** A migration as the code that ships it knows it. */
export interface MigrationMark {
  /** Schema version, from 1, ascending, never reused. */
  readonly version: number;
  /** Its name, recorded with it: a known version under another name is a schema mcp-tasks did not write. */
  readonly name: string;
  /**
   * Whether code that predates this migration can no longer run on the schema it leaves. `true` when a statement of
   * that older code fails or changes meaning on it: a column it reads or writes dropped, renamed or retyped; a
   * column added to a table older code reads with `*` in a named statement (PostgreSQL then fails that statement
   * with "cached plan must not change result type", see `p.*` over `processes`); a constraint that rejects what it
   * writes; data moved to where it no longer looks; a changed layout of what older code receives, such as the payload
   * of an existing NOTIFY channel (older code parses the feed's events there by position: `parseNotification`).
   * `false` (additive) for new tables, indexes, functions and triggers, and changes older statements never see. Recorded when the migration is applied; never changed once
   * released.
   */
  readonly breaking: boolean;
}

/** A row of the store's `schema_migrations` table. */
export interface AppliedMigration {
  readonly version: number;
  readonly name: string;
  /**
   * The mark recorded with it: `null` when none was — a row applied before the store had the column (never
   * consulted: only rows newer than the reading code are, and code that reads marks wrote its own), or written by
   * hand. An unmarked newer row counts as breaking.
   */
  readonly breaking: boolean | null;
}

/**
 * What a schema is to this code:
 * - `empty`: no migration applied (a fresh database or file): the first start creates the schema.
 * - `older`: versions this code knows are missing: the next start of this code migrates it.
 * - `current`: exactly the versions this code knows.
 * - `newer-compatible`: versions this code does not know, none of them breaking: it starts and is ready on it.
 * - `newer-breaking`: a version this code does not know is breaking (or unmarked): it must not run on it.
 * - `foreign`: a version this code knows carries another name, or is missing below the newest applied one: not a
 *   schema mcp-tasks wrote (or an incomplete one).
 */
export type SchemaState = 'empty' | 'older' | 'current' | 'newer-compatible' | 'newer-breaking' | 'foreign';

/** The verdict of {@link judgeSchema}. */
export interface SchemaCompatibility {
  state: SchemaState;
  /** Highest version applied (0: none). */
  applied: number;
  /** Highest version this code knows. */
  expected: number;
  /** The applied versions this code does not know, ascending (empty unless `newer-*`). */
  newer: number[];
  /**
   * One line for operators when this code must not run on the schema (`newer-breaking`, `foreign`), starting
   * "schema version …"; absent otherwise. Start-up throws it (`schema_mismatch`), `/readyz` and `doctor` show it.
   */
  problem?: string;
  /**
   * For an `empty` or `older` schema: the first migration this code would apply that is breaking for older code
   * (a start refuses to apply it while other processes are live, see {@link assertNoLiveProcessesFor}); absent when
   * none is.
   */
  pendingBreaking?: MigrationMark;
}

/**
 * Judge the rows of a store's `schema_migrations` (any order) against the migrations this code knows (ascending).
 * Pure; the stores read the rows, this decides.
 */
export function judgeSchema(rows: readonly AppliedMigration[], known: readonly MigrationMark[]): SchemaCompatibility {
  const expected = known.at(-1)?.version ?? 0;
  const sorted = [...rows].sort((a, b) => a.version - b.version);
  const applied = sorted.at(-1)?.version ?? 0;
  const byVersion = new Map(known.map((migration) => [migration.version, migration]));
  for (const row of sorted) {
    const mine = byVersion.get(row.version);
    if (row.version <= expected && mine?.name !== row.name) {
      return {
        state: 'foreign',
        applied,
        expected,
        newer: [],
        problem: `schema version ${row.version} is "${row.name}", expected "${mine?.name ?? '(none)'}": its schema_migrations was not written by mcp-tasks`,
      };
    }
  }
  const unknown = sorted.filter((row) => row.version > expected);
  const newer = unknown.map((row) => row.version);
  // The first newer migration older code cannot run past; an unmarked row was never declared compatible.
  const first = unknown.find((row) => row.breaking !== false);
  // A gap: a version this code knows is missing below the newest applied one (rows deleted or written by hand, a
  // migrate that was not this project's). Judged current, `migrate` would skip the missing one for good. A newer
  // breaking migration is said first: this code must not run on that schema either way, and upgrading is the step.
  const present = new Set(sorted.map((row) => row.version));
  const missing = known.find((migration) => migration.version < applied && !present.has(migration.version));
  if (missing !== undefined && first === undefined) {
    return {
      state: 'foreign',
      applied,
      expected,
      newer: [],
      problem: `schema version ${missing.version} ("${missing.name}") is missing below the newest applied version (${applied}): its schema_migrations is incomplete or was not written by mcp-tasks`,
    };
  }
  if (unknown.length === 0) {
    const pendingBreaking = known.find((migration) => migration.version > applied && migration.breaking);
    const state = applied === 0 ? 'empty' : applied < expected ? 'older' : 'current';
    return pendingBreaking === undefined ? { state, applied, expected, newer } : { state, applied, expected, newer, pendingBreaking };
  }
  if (first === undefined) return { state: 'newer-compatible', applied, expected, newer };
  return {
    state: 'newer-breaking',
    applied,
    expected,
    newer,
    problem:
      `schema version ${applied} is newer than this mcp-tasks knows (${expected}), and migration ${first.version} ("${first.name}") ` +
      `${first.breaking === null ? 'is not marked compatible with older code' : 'is breaking for older code'}: upgrade mcp-tasks`,
  };
}

/** Whether a process of this code may start on a schema so judged (it migrates `empty` and `older` ones first). */
export function mayStartOn(schema: SchemaCompatibility): boolean {
  return schema.state !== 'newer-breaking' && schema.state !== 'foreign';
}

/**
 * Refuse to start on a schema so judged when this code must not run on it (see {@link mayStartOn}); the migration of
 * either store calls it before it applies anything.
 * @throws {StoreError} `schema_mismatch` with the judgement's reason (a newer breaking or unmarked migration, a
 *   foreign or incomplete history).
 */
export function assertMayStartOn(schema: SchemaCompatibility): void {
  if (!mayStartOn(schema))
    throw new StoreError('schema_mismatch', `task store ${schema.problem ?? `schema version ${schema.applied} is not one this code runs on`}`);
}

/** What one migration call of a store did and found (`migrateSchema` of either store). */
export interface MigrateOutcome {
  /** The versions this call applied, ascending (empty when the schema was current, or newer). */
  applied: number[];
  /** The schema as found before applying (`newer-compatible`: this code runs on a newer, compatible schema). */
  schema: SchemaCompatibility;
}

/** Whether a running process of this code is ready on a schema so judged (`/readyz`): current, or newer but compatible. */
export function readyOn(schema: SchemaCompatibility): boolean {
  return schema.state === 'current' || schema.state === 'newer-compatible';
}

/** The log line of a store opened on a `newer-compatible` schema (both stores write it, with the verdict's fields). */
export const NEWER_COMPATIBLE_SCHEMA =
  'task store schema is newer than this mcp-tasks knows, and every newer migration is marked compatible: running on it (a rolling deploy or a rollback under way)';

/** A live registration of the store's process registry, as a breaking migration's refusal names it. */
export interface LiveRegistration {
  readonly instanceId: string;
  readonly role: string;
  readonly host: string;
  readonly pid: number;
}

/**
 * Refuse to apply a breaking migration while other processes are live on the store. Before the migration commits, the
 * schema is one every live process was written for, so each runs code older than the migration; the moment it
 * commits, their statements fail or change meaning (that is what breaking means), mid-run, with tasks leased to
 * them. Registrations lapse a few seconds after their process ends (a beat's lifetime), so an orchestrator that
 * restarts the refused process gets through once the older processes are gone. Compatible migrations never wait.
 * Both stores call it in their migration transaction, before applying anything, with the registry's live rows.
 * @param pending - the migrations this call would apply, ascending
 * @param registered - the registry's live rows (an empty list when the schema has no registry yet); a predecessor's
 *   row of this process (see `gonePredecessor`) does not count
 * @throws {StoreError} `unavailable` (nothing applied; retry once they have stopped), naming the first breaking
 *   migration and up to 5 of the live processes.
 */
export function assertNoLiveProcessesFor(pending: readonly MigrationMark[], registered: readonly LiveRegistration[]): void {
  const breaking = pending.find((migration) => migration.breaking);
  // A predecessor's row (this host, a pid gone or this very pid: a restart) stands for no running code.
  const live = registered.filter((registration) => !gonePredecessor(registration));
  if (breaking === undefined || live.length === 0) return;
  const named = live
    .slice(0, 5)
    .map((p) => `${p.role} ${p.instanceId} (pid ${p.pid} on ${p.host})`)
    .join(', ');
  const more = live.length > 5 ? ` and ${live.length - 5} more` : '';
  throw new StoreError(
    'unavailable',
    `task store migration ${breaking.version} ("${breaking.name}") is breaking for older code, and ${live.length} process${live.length === 1 ? ' is' : 'es are'} live on the store: ${named}${more}; stop them (a registration lapses a few seconds after its process ends), then start this version again. Nothing was migrated`,
  );
}
