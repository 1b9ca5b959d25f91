/**
 * Setup file of the e2e tier, whose files share one process per worker (`isolate: false` in vitest.config.ts): a
 * process a file spawned and did not stop (a test that timed out while its server was still starting or draining)
 * is killed when the file ends, as it was when each file had a process of its own — not left running, with its
 * port, store and CPU, under the files that come after it. Registered before the file's own hooks, this `afterAll`
 * runs after them (vitest runs after-hooks in reverse order), so a file's own clean stop comes first.
 */
import { afterAll } from 'vitest';

import { killAll } from './child-reaper.js';

afterAll(killAll);
