/**
 * Issue 14 item 4: a suite that passes everything proves nothing. Each deliberately broken variant of our fixture
 * server (test/helpers/verify-targets.ts; never a flag of the shipped server) seeds one defect, and `verify` must
 * report exactly the check meant for it as failed — while control checks of the same area, run in the same pass
 * against the same broken server, still pass (so a defect is pinned to its check, not to "everything broke").
 * The healthy server passes all of them (verify-our-server.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TokenFileAuthenticator } from '../../src/auth/token-file.js';
import { ALL_CHECKS, resolveToolMap, runVerify, type VerifyReport } from '../../src/verify/index.js';
import type { RunningTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { identityByTenant, startDefectFront, startFixtureServer, TOKENS, type WireDefect, writeTokenFile } from '../helpers/verify-targets.js';

const temp = makeTempDir('mcp-tasks-defects-');
const tokenFile = writeTokenFile(temp.dir);
afterAll(() => temp.remove());

const map = resolveToolMap({ thresholds: { idSample: 8 } });

async function verify(url: string, only: string[]): Promise<VerifyReport> {
  return runVerify({
    target: { url, tokenA: TOKENS.a, tokenB: TOKENS.b },
    generations: ['v1', 'v2'],
    map,
    checks: ALL_CHECKS,
    only,
    parallel: 6,
    requestTimeoutMs: 5000,
  });
}

const failed = (report: VerifyReport): string[] =>
  report.results
    .filter((result) => result.status === 'failed')
    .map((result) => result.id)
    .sort();
const unproven = (report: VerifyReport): string[] =>
  report.results.filter((result) => result.status === 'skipped').map((result) => `${result.id}: ${result.message}`);

interface Seeded {
  defect: WireDefect;
  /** What the defect is, for the test name. */
  what: string;
  /** Checks run against it: the meant ones and controls of the same area. */
  only: string[];
  /** The checks that must fail — exactly these. */
  caughtBy: string[];
  /** A phrase the failure message must contain. */
  says: RegExp;
}

const SEEDED: Seeded[] = [
  {
    defect: 'terminal-regresses',
    what: 'a completed task reads "working" again from its third terminal read on',
    only: ['*.status.lifecycle', 'v1.result.completed', 'v2.get.shape'],
    caughtBy: ['v1.status.lifecycle', 'v2.status.lifecycle'],
    says: /illegal transition completed → working/,
  },
  {
    defect: 'cancel-terminal-accepted',
    what: 'v1 tasks/cancel of a terminal task is answered with a cancelled task instead of -32602',
    only: ['v1.cancel.terminal', 'v1.cancel.working', 'v2.cancel.terminal', 'v1.errors.unknown-task-id'],
    caughtBy: ['v1.cancel.terminal'],
    says: /tasks\/cancel of a completed task was accepted/,
  },
  {
    defect: 'missing-32021',
    what: 'a task-only tool called without the extension answers an inline error result instead of -32021',
    only: ['v2.compat.non-declaring-required', 'v2.compat.non-declaring-optional', 'v2.methods.non-declaring'],
    caughtBy: ['v2.compat.non-declaring-required'],
    says: /expected error -32021, got HTTP 200, result .*runs only as a task/,
  },
  {
    defect: 'status-echo',
    what: 'the tool arguments are echoed raw into statusMessage (control characters, secrets)',
    only: ['*.security.status-message', '*.security.guessed-ids'],
    caughtBy: ['v1.security.status-message', 'v2.security.status-message'],
    says: /statusMessage contains the planted secret/,
  },
  {
    defect: 'status-c0c1-only',
    what: 'statusMessage sanitised as before issue 23 §3 (secrets and C0/C1 gone; bidi, U+2028 and role markers kept)',
    only: ['*.security.status-message', '*.security.guessed-ids'],
    caughtBy: ['v1.security.status-message', 'v2.security.status-message'],
    says: /statusMessage contains line or paragraph separator U\+2028, contains the role marker "SYSTEM:"/,
  },
  {
    defect: 'status-latin-markers-only',
    what: 'statusMessage sanitised by the rule, but a role marker spelt with Cyrillic look-alikes (ЅYЅТЕМ:) kept',
    only: ['*.security.status-message', '*.security.guessed-ids'],
    caughtBy: ['v1.security.status-message', 'v2.security.status-message'],
    says: /contains the role marker "\u0405Y\u0405\u0422\u0415\u041c:"/,
  },
  {
    defect: 'foreign-distinguishable',
    what: 'another principal\'s task is answered "access denied" instead of exactly like an unknown id',
    only: ['*.security.cross-owner-read', '*.security.guessed-ids'],
    caughtBy: ['v1.security.cross-owner-read', 'v2.security.cross-owner-read'],
    says: /differs from the answer for an unknown id/,
  },
];

describe('seeded defects on the wire are caught by the check meant for each', () => {
  let server: RunningTasksServer;
  beforeAll(async () => {
    server = await startFixtureServer(TokenFileAuthenticator.fromFile(tokenFile));
  });
  afterAll(() => server?.close());

  for (const seeded of SEEDED) {
    it(`${seeded.defect}: ${seeded.what} → ${seeded.caughtBy.join(', ')}`, async () => {
      const front = await startDefectFront(server.url, seeded.defect);
      try {
        const report = await verify(front.url, seeded.only);
        expect(unproven(report)).toEqual([]);
        expect(failed(report)).toEqual([...seeded.caughtBy].sort());
        for (const id of seeded.caughtBy) expect(report.results.find((result) => result.id === id)?.message, id).toMatch(seeded.says);
        expect(front.rewrites()).toBeGreaterThan(0);
      } finally {
        await front.close();
      }
    }, 60_000);
  }

  it('negative control: the same checks through a front that seeds nothing all pass', async () => {
    const front = await startDefectFront(server.url, 'none');
    try {
      const report = await verify(front.url, [...new Set(SEEDED.flatMap((seeded) => seeded.only))]);
      expect(unproven(report)).toEqual([]);
      expect(failed(report)).toEqual([]);
      expect(front.rewrites()).toBe(0);
    } finally {
      await front.close();
    }
  }, 60_000);
});

describe('a seeded identity defect: the authenticator keys owners by tenant, so a foreign task leaks', () => {
  let server: RunningTasksServer;
  beforeAll(async () => {
    server = await startFixtureServer(identityByTenant(tokenFile));
  });
  afterAll(() => server?.close());

  it("principal B reads A's task: caught by v1/v2 security.cross-owner-read, the other security checks still pass", async () => {
    const report = await verify(server.url, [
      '*.security.cross-owner-read',
      '*.security.guessed-ids',
      '*.security.unauthenticated',
      '*.security.bound-to-caller',
    ]);
    expect(unproven(report)).toEqual([]);
    expect(failed(report)).toEqual(['v1.security.cross-owner-read', 'v2.security.cross-owner-read']);
    for (const generation of ['v1', 'v2']) {
      expect(report.results.find((result) => result.id === `${generation}.security.cross-owner-read`)?.message).toMatch(
        /principal B's tasks\/get of A's task .* was answered with A's data/,
      );
    }
    expect(report.exitCode).toBe(1);
  }, 60_000);
});
