import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { isPathInside } from '../../src/core/path-inside.js';
import { isInsideRoots } from '../../src/tools/roots.js';

/** Stop 41 (a reviewer): `relative(...).startsWith('..')` took a name beginning with two dots for a way out. */
describe('isPathInside', () => {
  it('a name that starts with two dots is inside; .. and ../ leave (control: the old startsWith check got the first wrong)', () => {
    expect(isPathInside('/data', '/data')).toBe(true);
    expect(isPathInside('/data', '/data/..cache/tasks.db')).toBe(true);
    expect(isPathInside('/data', '/data/a/..b')).toBe(true);
    expect(isPathInside('/data', '/')).toBe(false);
    expect(isPathInside('/data', '/other/tasks.db')).toBe(false);
    expect(isPathInside('/data', '/data-2/tasks.db')).toBe(false);
    const old = (parent: string, candidate: string) => !path.relative(parent, candidate).startsWith('..');
    expect(old('/data', '/data/..cache/tasks.db')).toBe(false);
  });

  it("the roots check reads a root's file whose name starts with two dots; a path beside the root stays outside", () => {
    expect(isInsideRoots('/srv/logs/..2026/app.log', ['/srv/logs'])).toBe(true);
    expect(isInsideRoots('/srv/logs-old/app.log', ['/srv/logs'])).toBe(false);
    expect(isInsideRoots('/srv/app.log', ['/srv/logs'])).toBe(false);
  });
});
