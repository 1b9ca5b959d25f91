import { expect, it } from 'vitest';

import type { AuditEntry } from '../../src/core/ledger.js';
import { shadowMismatchEntry } from '../../src/ledger/audit.js';
import { describeOnBothStores } from '../helpers/both-stores.js';

// The audit read filtered by kind (admin shadow-report reads `shadow.mismatch` entries only), on both stores.

describeOnBothStores('audit log filtered by kind', (backend) => {
  it('listAudit({kind}) returns only entries of that kind, combined with since/tool, ascending; without kind every entry', async () => {
    const store = await backend.open();
    const call: AuditEntry = {
      at: 1000,
      kind: 'call',
      ownerKey: 'o',
      scopes: null,
      tool: 'job',
      taskId: 't0',
      argumentsDigest: null,
      outcome: 'task working',
      detail: null,
    };
    const task = { taskId: 't1', toolName: 'job', ownerKey: 'o' };
    await store.appendAudit([call, shadowMismatchEntry(task, { phase: 'final', taskState: 'completed', jobState: 'failed', jobId: 'j1' }, 2000)]);
    await store.appendAudit([
      shadowMismatchEntry({ ...task, taskId: 't2', toolName: 'other' }, { phase: 'running', taskState: 'working', jobState: 'cancelled', jobId: 'j2' }, 3000),
    ]);
    const shadow = await store.listAudit({ kind: 'shadow.mismatch', limit: 10 });
    expect(shadow.map((entry) => entry.taskId)).toEqual(['t1', 't2']);
    expect(shadow[0]).toMatchObject({
      outcome: 'task=completed job=failed',
      detail: { phase: 'final', taskState: 'completed', jobState: 'failed', jobId: 'j1' },
    });
    expect((await store.listAudit({ kind: 'shadow.mismatch', tool: 'other', limit: 10 })).map((entry) => entry.taskId)).toEqual(['t2']);
    expect((await store.listAudit({ kind: 'shadow.mismatch', since: 2500, limit: 10 })).map((entry) => entry.taskId)).toEqual(['t2']);
    expect((await store.listAudit({ kind: 'call', limit: 10 })).map((entry) => entry.taskId)).toEqual(['t0']);
    expect(await store.listAudit({ limit: 10 })).toHaveLength(3);
  });
});
