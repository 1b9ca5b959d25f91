/**
 * Issue 28: `checkDataDirArguments` (src/cli/upstream-settings.ts), the refusal of a stdio upstream whose argument
 * reaches this server's state, for each form an argument may name a path in. In process, so in the unit tier.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { realPathOf } from '../../src/cli/settings.js';
import { checkDataDirArguments } from '../../src/cli/upstream-settings.js';
import { UsageError } from '../../src/cli/usage-error.js';
import { parseUpstreamSpec } from '../../src/upstream/spec.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { stdioSpec } from '../helpers/upstream-servers.js';

const temp = makeTempDir();
afterAll(() => temp.remove());

describe('checkDataDirArguments: where an argument names a path', () => {
  // The check behind the exit-64 refusals of test/cli/upstream-start.test.ts, called directly for each form.
  const base = join(temp.dir, 'arguments');
  const dataDir = join(base, 'data');
  const elsewhere = join(base, 'documents');
  const check = (argument: string) => () =>
    checkDataDirArguments({
      upstreams: [parseUpstreamSpec(stdioSpec('files', [process.execPath, 'server.js', argument]))],
      upstreamsAllowDataDir: [],
      denied: [{ what: 'data directory', path: dataDir, real: realPathOf(dataDir) }],
    });
  beforeAll(() => {
    mkdirSync(dataDir, { recursive: true });
    mkdirSync(elsewhere, { recursive: true });
    writeFileSync(join(dataDir, 'secret'), 'not for upstreams');
  });

  it.each([
    ['a word', () => dataDir],
    ['--flag=value', () => `--root=${dataDir}`],
    ['a short option glued to its value (-d/path)', () => `-d${dataDir}`],
    ['the same holding the data directory', () => `-d${base}`],
    ['key=value without a dash (key=/path)', () => `root=${dataDir}`],
    ['the same naming a file inside it', () => `root=${join(dataDir, 'secret')}`],
  ])('refuses the data directory given as %s', (_form, argument) => {
    expect(check(argument())).toThrow(
      new UsageError(
        `upstream files: its argument ${JSON.stringify(argument())} reaches this server's data directory (${dataDir}), which it could read; give it a directory without this server's state, or set upstreamsAllowDataDir: ["files"] (--upstream-allow-data-dir files) if it must`,
      ),
    );
  });

  it.each([['-y'], ['--verbose'], ['-v'], ['a=b'], ['--name=stdio'], [elsewhere], [`-d${elsewhere}`], [`root=${elsewhere}`], [`--root=${elsewhere}`]])(
    'lets %s pass: a word that names nothing on disk, or a directory without the state',
    (argument) => {
      expect(check(argument)).not.toThrow();
    },
  );
});
