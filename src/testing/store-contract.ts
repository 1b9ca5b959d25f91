import { afterEach, beforeEach, describe } from 'vitest';

import type { TaskStore } from '../core/store.js';
import { FakeClock } from './fake-clock.js';
import { describeAdmissionContract } from './store-contract/admission.js';
import { describeFeedContract } from './store-contract/feed.js';
import { contractContext, T0, type TaskStoreFixture, type TaskStoreFixtureContext } from './store-contract/harness.js';
import { describeInputsContract } from './store-contract/inputs.js';
import { describeLeasesContract } from './store-contract/leases.js';
import { describeLedgerContract } from './store-contract/ledger.js';
import { describeMaintenanceContract } from './store-contract/maintenance.js';
import { describeProcessesContract } from './store-contract/processes.js';
import { describeResultsContract } from './store-contract/results.js';
import { describeRolloutContract } from './store-contract/rollout.js';
import { describeRowsContract } from './store-contract/rows.js';
import { describeSessionsContract } from './store-contract/sessions.js';
import { describeStepsContract } from './store-contract/steps.js';

export { expectStoreError, type StoreContractContext, type TaskStoreFixture, type TaskStoreFixtureContext } from './store-contract/harness.js';

/**
 * Register the behavioural contract of the {@link TaskStore} port as a vitest suite. Every backend runs it
 * unchanged; `makeStore` is called before each test and `cleanup` after it. Times are fixed epoch ms on a fake
 * clock that `makeStore` must give the store as its clock (leases, expiry sweeps), so the suite never sleeps.
 * One part per port, in `testing/store-contract/<port>.ts` (the names of `core/ports/` and of each backend's files).
 */
export function describeTaskStoreContract(name: string, makeStore: (context: TaskStoreFixtureContext) => Promise<TaskStoreFixture>): void {
  describe(`TaskStore contract: ${name}`, () => {
    let fixture: TaskStoreFixture;
    let store: TaskStore;
    let clock: FakeClock;

    beforeEach(async () => {
      clock = new FakeClock(T0);
      fixture = await makeStore({ clock });
      store = fixture.store;
    });
    afterEach(async () => {
      await fixture.cleanup();
    });

    const ctx = contractContext({ store: () => store, clock: () => clock, peer: async () => fixture.peer?.() });
    describeRowsContract(ctx);
    describeSessionsContract(ctx);
    describeFeedContract(ctx);
    describeLeasesContract(ctx);
    describeStepsContract(ctx);
    describeInputsContract(ctx);
    describeAdmissionContract(ctx);
    describeLedgerContract(ctx);
    describeRolloutContract(ctx);
    describeResultsContract(ctx);
    describeProcessesContract(ctx);
    describeMaintenanceContract(ctx);
  });
}
