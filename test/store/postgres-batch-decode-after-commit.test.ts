/**
 * Review 37b: a one-statement unit (`MergedWork.runAlone`) whose statement COMMITTED and whose decoding of the
 * returned rows then throws (a row this process cannot decrypt: a worker or API instance without the encryption key,
 * or with a key ring missing the key a newer instance writes with during a rotation). `runAlone`'s contract is "a
 * throw means nothing was written"; the batcher then runs the unit again in a transaction. The transaction path
 * (before 5aa6176) rolled the whole operation back: nothing claimed, nothing transitioned, the caller got the fault.
 */
import { randomBytes } from 'node:crypto';

import { describe, expect, it } from 'vitest';

import type { TaskEvent } from '../../src/core/ports/feed.js';
import { AesGcmFieldCipher } from '../../src/store/field-cipher.js';
import type { PostgresTaskStore } from '../../src/store/postgres/index.js';
import { newTaskInput } from '../helpers/new-task.js';
import { postgresStoresPerFile } from '../helpers/postgres.js';

const pgStores = postgresStoresPerFile();

async function open(withKey: boolean): Promise<PostgresTaskStore> {
  return pgStores.open(withKey ? { encryption: new AesGcmFieldCipher(randomBytes(32)) } : {});
}

describe('review 37b: a one-statement unit that commits, then fails to decode its rows', () => {
  it('a claim that committed but cannot decrypt the task is not answered "nothing claimed", and its event is published', async () => {
    const api = await open(true);
    const worker = await open(false);
    const events: TaskEvent[] = [];
    worker.onEvent((event) => events.push(event));
    const task = newTaskInput({ arguments: { secret: 'x' } });
    await api.create(task);
    const claimed = await worker.claimRunnable('worker-without-key', 60_000, 1).then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    const after = await api.getUnscoped(task.taskId);
    if (after?.leaseOwner === 'worker-without-key') {
      // The claim committed (the task is leased to this worker, its attempt counted): the caller must not be told it
      // claimed nothing — it would never run the task, which sits until the lease lapses with an attempt burnt.
      expect(claimed.ok && claimed.value.length === 0).toBe(false);
      // And the attempt event committed with it reaches this store's listeners exactly once.
      const stored = (await worker.readEventsAfter(0, 100)).filter((e) => e.taskId === task.taskId && e.kind === 'attempt');
      expect(stored).toHaveLength(1);
      expect(events.filter((e) => e.taskId === task.taskId && e.kind === 'attempt').map((e) => e.seq)).toEqual(stored.map((e) => e.seq));
    } else expect(claimed.ok).toBe(false);
  });

  it('a cancel by a process that cannot decrypt the task is not answered "did not apply" while it did apply', async () => {
    const api = await open(true);
    const other = await open(false);
    const events: TaskEvent[] = [];
    other.onEvent((event) => events.push(event));
    const task = newTaskInput({ arguments: { secret: 'x' } });
    await api.create(task);
    const outcome = await other.transition(task.taskId, { to: 'cancelled', now: Date.now() }).then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    const after = await api.getUnscoped(task.taskId);
    if (after?.status === 'cancelled') {
      // It applied: the caller must not be told it did not (undefined = the task was not in a from-status), and the
      // event committed with it must reach this store's listeners.
      expect(outcome.ok && outcome.value === undefined).toBe(false);
      expect(events.filter((e) => e.taskId === task.taskId && e.status === 'cancelled').length).toBe(1);
    } else expect(outcome.ok).toBe(false);
  });
});
