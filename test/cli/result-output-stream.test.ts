/**
 * `call|watch|resume --output FILE` saves a large result with bounded memory (a 60 MiB result peaked at ~600 MB RSS
 * in the CLI when it was read whole): its chunk resources, read through the SDK client on a server with the HTTP
 * fast path and on one without it, are rendered into the file as they arrive, multi-byte characters cut by chunk
 * boundaries intact, and the file appears only once complete.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { join } from 'node:path';

import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { defineTool, textResult } from '../../src/core/tool.js';
import { RESULT_READ_CHUNK_BYTES } from '../../src/protocol/result-uri.js';
import type { TaskServiceHook } from '../../src/service/hooks.js';
import { reaped } from '../helpers/child-reaper.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { cliRunner, ensureBuilt, MAIN, type Run } from './support.js';

/** Lines of 2-, 3- and 4-byte characters and JSON escapes, of a length that does not divide any chunk size. */
function bigText(bytes: number): string {
  const line = 'ligne é ü — 漢字 🙂 "quoted" \\ back\tslash';
  const lines: string[] = [];
  for (let i = 0, total = 0; total < bytes; i++) {
    const next = `${String(i).padStart(7, '0')} ${line}`;
    lines.push(next);
    total += Buffer.byteLength(next) + 1;
  }
  return lines.join('\n');
}

/** 3 MiB: above the 1 MiB a buffered resources/read answers whole, so a server without the fast path sends chunks. */
const BIG = bigText(3 * 1024 * 1024);
/** 16 MiB for the memory bound: read whole, the CLI needs several times that in heap. */
const HUGE = bigText(16 * 1024 * 1024);

describe('--output: a large result streamed into the file', () => {
  const temp = makeTempDir('mcp-tasks-output-stream-');
  const env: NodeJS.ProcessEnv = { ...process.env, MCP_TASKS_CLIENT_STATE: join(temp.dir, 'journal.json') };
  delete env.MCP_TASKS_URL;
  delete env.MCP_TASKS_TOKEN;
  delete env.NODE_OPTIONS;
  const { cli, start } = cliRunner(env);
  /**
   * The CLI run by `sh -c script`, which runs it as `"$@"` (`$0` is `arg0`): under a `ulimit`, or with `prefix`
   * (`unshare -m`) in a mount namespace of its own.
   */
  const shell = (script: string, arg0: string, args: string[], prefix: string[] = []): Promise<Run> => {
    const command = [...prefix, 'sh', '-c', script, arg0, process.execPath, MAIN, ...args];
    const child = reaped(spawn(command[0]!, command.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] }));
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    return new Promise((resolveRun) => child.on('close', (code) => resolveRun({ code, stdout, stderr })));
  };
  let fast: RunningTasksServer;
  let chunked: RunningTasksServer;
  let expiring: RunningTasksServer;
  /** While set, a result read finds its task expired: the server no longer keeps the result. */
  let expireOnRead = false;
  /** While set, the store hands out no result chunk past the third: the server breaks off the answer mid-way. */
  let breakReads = false;
  /** While set, a read of a stored chunk past the second waits until released: the CLI is mid-read. */
  let holdReads: { reached(): void; released: Promise<void> } | undefined;
  const tools = [
    defineTool({ name: 'big', description: '3 MiB', execution: 'task-optional', inputSchema: z.object({}), run: async () => textResult(BIG) }),
    defineTool({ name: 'huge', description: '16 MiB', execution: 'task-optional', inputSchema: z.object({}), run: async () => textResult(HUGE) }),
    defineTool({ name: 'small', description: 'hello', execution: 'task-optional', inputSchema: z.object({}), run: async () => textResult('hellö') }),
  ];

  beforeAll(async () => {
    ensureBuilt();
    const limits = { maxResultBytes: 100_000, pollIntervalMs: 100 };
    fast = await startTasksServer({
      tools,
      limits,
      wrapStore: (store) =>
        new Proxy(store, {
          get(target, property, receiver) {
            if (property === 'readResultChunk')
              return async (taskId: string, index: number) => {
                if (holdReads && index > 1) {
                  holdReads.reached();
                  await holdReads.released;
                }
                return breakReads && index > 2 ? undefined : target.readResultChunk(taskId, index);
              };
            const value = Reflect.get(target, property, receiver) as unknown;
            return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
          },
        }),
    });
    chunked = await startTasksServer({ tools, limits, fastPath: false });
    // The task expires between its end and --output's read of its result: its TTL passes, the sweep purges it.
    const expire: TaskServiceHook = {
      around: async (context, next) => {
        if (context.operation === 'readResource' && expireOnRead && context.taskId !== undefined) {
          const db = new Database(expiring.dbPath);
          db.prepare('UPDATE tasks SET expires_at = 1 WHERE task_id = ?').run(context.taskId);
          db.close();
          await expiring.store.expireDue(100); // the server's own sweep purges it, as it does past a TTL
        }
        return next();
      },
    };
    expiring = await startTasksServer({ tools, limits, hooks: [expire] });
  });
  afterAll(async () => {
    await fast.close();
    await chunked.close();
    await expiring.close();
    temp.remove();
  });

  it('the test text has chunk boundaries inside multi-byte characters', () => {
    const json = Buffer.from(JSON.stringify({ content: [{ type: 'text', text: BIG }] }));
    const cut = Array.from({ length: Math.floor(json.length / RESULT_READ_CHUNK_BYTES) }, (_, i) => json[(i + 1) * RESULT_READ_CHUNK_BYTES]!);
    expect(cut.some((byte) => (byte & 0xc0) === 0x80)).toBe(true);
  });

  for (const path of ['fast path', 'chunked path'] as const) {
    it.each(['2025-11-25', '2026-07-28'])(
      `${path}, over %s: the file equals the result byte for byte; --json holds the whole result`,
      async (protocol) => {
        const url = path === 'fast path' ? fast.url : chunked.url;
        const file = join(temp.dir, `${path}-${protocol}.txt`);
        const saved = await cli(['call', 'big', '--url', url, '--protocol', protocol, '--output', file]);
        expect(saved.code, saved.stderr).toBe(0);
        expect(readFileSync(file).equals(Buffer.from(`${BIG}\n`, 'utf8'))).toBe(true);
        expect(saved.stderr).toContain(`(${Buffer.byteLength(`${BIG}\n`)} bytes, read back in full from the server)`);

        const taskId = /task (\S+) created/.exec(saved.stderr)?.[1] as string;
        const json = join(temp.dir, `${path}-${protocol}.json`);
        const watched = await cli(['watch', taskId, '--url', url, '--protocol', protocol, '--json', '--output', json]);
        expect(watched.code, watched.stderr).toBe(0);
        const document = JSON.parse(readFileSync(json, 'utf8')) as { result: { content: Array<{ text: string }> } };
        expect(document).toMatchObject({ taskId, status: 'completed', result: { content: [{ type: 'text' }] } });
        expect(document.result.content[0]!.text === BIG).toBe(true);
        expect(document.result).not.toHaveProperty('resultType');
      },
      60_000,
    );
  }

  it('memory stays bounded: 16 MiB saved by a CLI whose heap may not exceed 40 MB (read whole, it ran out of memory)', async () => {
    const bounded = cliRunner({ ...env, NODE_OPTIONS: '--max-old-space-size=40' });
    for (const [protocol, flags] of [
      ['2026-07-28', []],
      ['2025-11-25', ['--json']],
    ] as const) {
      const file = join(temp.dir, `huge-${protocol}.out`);
      const saved = await bounded.cli(['call', 'huge', '--url', fast.url, '--protocol', protocol, ...flags, '--output', file]);
      expect(saved.code, saved.stderr.slice(0, 2000)).toBe(0);
      if (flags.length === 0) expect(readFileSync(file).equals(Buffer.from(`${HUGE}\n`, 'utf8'))).toBe(true);
    }
  }, 120_000);

  it('a read that breaks off leaves no file and nothing beside it; a file already there is left as it was', async () => {
    const file = join(temp.dir, 'broken', 'out.txt');
    const { mkdirSync, writeFileSync } = await import('node:fs');
    mkdirSync(join(temp.dir, 'broken'));
    breakReads = true;
    try {
      for (const protocol of ['2025-11-25', '2026-07-28']) {
        const failed = await cli(['call', 'big', '--url', fast.url, '--protocol', protocol, '--output', file]);
        // The server answers the chunk it cannot serve with -32603: a protocol error, nothing about the file.
        expect(failed.code, failed.stderr).toBe(5);
        expect(failed.stderr).toContain('the result was deleted while it was read');
        expect(existsSync(file)).toBe(false);
        expect(readdirSync(join(temp.dir, 'broken'))).toEqual([]);
      }
      writeFileSync(file, 'kept');
      const again = await cli(['call', 'big', '--url', fast.url, '--output', file]);
      expect(again.code, again.stderr).toBe(5);
      expect(readFileSync(file, 'utf8')).toBe('kept');
      expect(readdirSync(join(temp.dir, 'broken'))).toEqual(['out.txt']);
    } finally {
      breakReads = false;
    }
  }, 60_000);

  it.each(['2025-11-25', '2026-07-28'])(
    'over %s: a result gone before --output read it (the task expired) exits 4 naming the task; control: a kept one exits 0',
    async (protocol) => {
      const file = join(temp.dir, `expired-${protocol}.txt`);
      expireOnRead = true;
      let gone;
      try {
        gone = await cli(['call', 'big', '--url', expiring.url, '--protocol', protocol, '--output', file]);
      } finally {
        expireOnRead = false;
      }
      const taskId = /task (\S+) created/.exec(gone.stderr)?.[1] as string;
      expect(gone.code, gone.stderr).toBe(4);
      expect(gone.stderr).toContain(`The result of task ${taskId} is no longer kept on the server`);
      expect(gone.stderr).toContain(`--output ${file} could not read it`);
      expect(existsSync(file)).toBe(false);
      const json = await cli(['call', 'big', '--url', expiring.url, '--protocol', protocol, '--json', '--output', file]);
      expect(json.code, json.stderr).toBe(0); // control: kept (expireOnRead is off)
      expect(readFileSync(file, 'utf8')).toContain('"status": "completed"');
    },
    60_000,
  );

  it('control: a small result is written as it came, and resume --output saves the one task it follows', async () => {
    const file = join(temp.dir, 'small.txt');
    const small = await cli(['call', 'small', '--url', fast.url, '--output', file]);
    expect(small.code, small.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe('hellö\n');

    const detached = await cli(['call', 'big', '--url', fast.url, '--detach']);
    expect(detached.code, detached.stderr).toBe(0);
    const resumed = join(temp.dir, 'resumed.txt');
    const resume = await cli(['resume', '--url', fast.url, '--output', resumed]);
    expect(resume.code, resume.stderr).toBe(0);
    expect(readFileSync(resumed).equals(Buffer.from(`${BIG}\n`, 'utf8'))).toBe(true);
  }, 60_000);

  it('--output /dev/stdout reaches the pipe, and a FIFO gets the bytes: neither is replaced by a file', async () => {
    // /dev/stdout in a mount namespace of the CLI's own, over a private /dev (a tmpfs with stdout, null and urandom):
    // had the code replaced it, only that /dev would be touched, never this machine's.
    const devDir = join(temp.dir, 'private-dev');
    mkdirSync(devDir);
    const script = [
      'mount -t tmpfs mcp-tasks-dev /dev || exit 99',
      'ln -s /proc/self/fd/1 /dev/stdout && mknod /dev/null c 1 3 && mknod /dev/urandom c 1 9 && chmod 666 /dev/null /dev/urandom || exit 98',
      '"$@" > "$0/out"; code=$?',
      'printf "exit=%s stdout-link=%s\\n" "$code" "$(test -L /dev/stdout && echo yes || echo no)"',
    ].join('\n');
    const piped = await shell(script, devDir, ['call', 'big', '--url', fast.url, '--output', '/dev/stdout'], ['unshare', '-m']);
    // Loud where a mount namespace cannot be had (not root, no unshare): this test needs one.
    expect(piped.stdout, `unshare -m with a tmpfs /dev is needed here: ${piped.stderr}`).toBe('exit=0 stdout-link=yes\n');
    expect(readFileSync(join(devDir, 'out')).equals(Buffer.from(`${BIG}\n`, 'utf8'))).toBe(true);

    const dir = join(temp.dir, 'fifo');
    const fifo = join(dir, 'out');
    spawnSync('mkdir', [dir]);
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    for (const flags of [[], ['--json']]) {
      // The reader: a process of its own (opening a FIFO blocks until a writer comes), ended below if none ever does.
      const reader = spawn('cat', [fifo], { stdio: ['ignore', 'pipe', 'ignore'] });
      const parts: Buffer[] = [];
      reader.stdout.on('data', (part: Buffer) => parts.push(part));
      const read = new Promise<void>((resolveRead) => reader.on('close', () => resolveRead()));
      const saved = await cli(['call', 'big', '--url', fast.url, ...flags, '--output', fifo]);
      const replaced = !statSync(fifo).isFIFO();
      if (replaced) reader.kill();
      await read;
      expect(saved.code, saved.stderr).toBe(0);
      expect(replaced).toBe(false);
      const got = Buffer.concat(parts).toString('utf8');
      if (flags.length === 0) expect(got === `${BIG}\n`).toBe(true);
      else expect((JSON.parse(got) as { result: { content: Array<{ text: string }> } }).result.content[0]!.text === BIG).toBe(true);
      expect(readdirSync(dir)).toEqual(['out']);
    }
  }, 60_000);

  it('Ctrl-C during the read-back exits 130 at once and leaves no file and nothing beside it', async () => {
    const dir = join(temp.dir, 'interrupted');
    const file = join(dir, 'out.txt');
    // $TMPDIR of its own: another process's leftovers in the shared one are not this run's.
    const spools = join(temp.dir, 'interrupted-tmp');
    mkdirSync(dir);
    mkdirSync(spools);
    const { start: startHere } = cliRunner({ ...env, TMPDIR: spools });
    let release = (): void => {};
    const released = new Promise<void>((resolveRelease) => (release = resolveRelease));
    try {
      for (const flags of [[], ['--json']]) {
        const reached = new Promise<void>((resolveReached) => (holdReads = { reached: resolveReached, released }));
        const running = startHere(['call', 'big', '--url', fast.url, ...flags, '--output', file]);
        await reached; // the server holds a chunk: the CLI has written some and waits for the rest
        running.child.kill('SIGINT');
        const interrupted = await running.done;
        expect(interrupted.code, interrupted.stderr).toBe(130);
        expect(interrupted.stderr).toMatch(/interrupted; --output \S+ was not written.*\n.*still kept on the server; save it with: .*watch \S+/);
        expect(readdirSync(dir)).toEqual([]);
        expect(readdirSync(spools)).toEqual([]);
      }
    } finally {
      holdReads = undefined;
      release();
    }
  }, 60_000);

  it('an existing file keeps its mode (0600 stays 0600), not its other hard links; a new one follows the umask', async () => {
    const { chmodSync, linkSync, writeFileSync } = await import('node:fs');
    const dir = join(temp.dir, 'modes');
    spawnSync('mkdir', [dir]);
    const secret = join(dir, 'secret.txt');
    writeFileSync(secret, 'old');
    chmodSync(secret, 0o600);
    const linked = join(dir, 'linked.txt');
    writeFileSync(linked, 'old');
    chmodSync(linked, 0o640);
    linkSync(linked, join(dir, 'other-name.txt'));
    for (const [file, mode] of [
      [secret, 0o600],
      [linked, 0o640],
    ] as const) {
      const saved = await cli(['call', 'big', '--url', fast.url, '--output', file]);
      expect(saved.code, saved.stderr).toBe(0);
      expect(statSync(file).mode & 0o777).toBe(mode);
      expect(readFileSync(file).equals(Buffer.from(`${BIG}\n`, 'utf8'))).toBe(true);
    }
    // A hard-linked file is replaced like any other (see the next test for why): the other name keeps the old contents.
    expect(statSync(linked).ino).not.toBe(statSync(join(dir, 'other-name.txt')).ino);
    expect(readFileSync(join(dir, 'other-name.txt'), 'utf8')).toBe('old');
    const fresh = join(dir, 'new.txt');
    expect((await cli(['call', 'small', '--url', fast.url, '--output', fresh])).code).toBe(0);
    expect(statSync(fresh).mode & 0o777).toBe(0o666 & ~process.umask());
  }, 60_000);

  it('a hard-linked file on a disk that fills midway is left as it was under both names (written in place, both were cut short)', async () => {
    // A 1 MiB tmpfs of the CLI's own (a private mount namespace: the mount is gone with it, never on this machine's
    // tree) holds the file; the 3 MiB result cannot fit. $TMPDIR stays on the big disk, as it often is.
    const dir = join(temp.dir, 'small-disk');
    mkdirSync(dir);
    const script = [
      'mount -t tmpfs -o size=1m mcp-tasks-test "$0" || exit 99',
      'cd "$0" && printf old > out.txt && ln out.txt other.txt || exit 98',
      '"$@"; code=$?',
      'printf "exit=%s out=%s other=%s files=%s\\n" "$code" "$(head -c 8 out.txt)" "$(head -c 8 other.txt)" "$(ls -A | tr "\\n" " ")"',
    ].join('\n');
    const run = await shell(script, dir, ['call', 'big', '--url', fast.url, '--output', join(dir, 'out.txt')], ['unshare', '-m']);
    // Loud where a mount namespace cannot be had (not root, no unshare): this test needs one.
    expect(run.code, `unshare -m with a tmpfs mount is needed here: ${run.stderr}`).toBe(0);
    expect(run.stdout).toBe('exit=74 out=old other=old files=other.txt out.txt \n');
    expect(run.stderr).toContain(`--output ${join(dir, 'out.txt')}: could not write the result here (ENOSPC`);
    expect(run.stderr).toContain('is left as it was (nothing was written to it)');
    expect(readdirSync(dir)).toEqual([]);
  }, 60_000);

  it('a FIFO whose reader stops early (| head) ends the command quietly with its own exit code, not 74; control: the reader got its bytes', async () => {
    const dir = join(temp.dir, 'fifo-head');
    mkdirSync(dir);
    const fifo = join(dir, 'out');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    // The reader takes 10 bytes of the 3 MiB result and goes away, as `head -c 10` does.
    const reader = spawn('head', ['-c', '10', fifo], { stdio: ['ignore', 'pipe', 'ignore'] });
    const parts: Buffer[] = [];
    reader.stdout.on('data', (part: Buffer) => parts.push(part));
    const read = new Promise<void>((resolveRead) => reader.on('close', () => resolveRead()));
    const saved = await cli(['call', 'big', '--url', fast.url, '--output', fifo]);
    await read;
    expect(Buffer.concat(parts).length).toBe(10);
    expect(saved.code, saved.stderr).toBe(0);
    expect(saved.stderr).not.toContain('could not write');
    expect(statSync(fifo).isFIFO()).toBe(true);
  }, 60_000);

  it('a device written in place that fails midway (a full device) says FILE may hold part of the result', async () => {
    // Our own /dev/full (character device 1,7) in a temporary directory: whatever the code does with it, the
    // machine's /dev is never touched.
    const dir = join(temp.dir, 'device');
    mkdirSync(dir);
    const full = join(dir, 'full');
    expect(spawnSync('mknod', [full, 'c', '1', '7']).status, 'mknod (root) is needed here').toBe(0);
    const run = await cli(['call', 'big', '--url', fast.url, '--output', full]);
    const taskId = /task (\S+) created/.exec(run.stderr)?.[1] as string;
    expect(run.code, run.stderr).toBe(74);
    expect(run.stderr).toContain(`--output ${full}: could not write the result here (ENOSPC`);
    expect(run.stderr).toContain(`${full} may hold part of the result (it is written in place, as with >)`);
    expect(run.stderr).toContain('still kept on the server');
    expect(run.stderr).toMatch(new RegExp(`save it again.*\\bwatch ${taskId}\\b.* --output <file>`));
    expect(lstatSync(full).isCharacterDevice()).toBe(true);
    const json = await cli(['watch', taskId, '--url', fast.url, '--json', '--output', full]);
    expect(json.code, json.stderr).toBe(74);
    expect(JSON.parse(json.stdout)).toMatchObject({ taskId, status: 'output_failed', output: full, partial: true, error: { code: 'ENOSPC' } });
    expect(readdirSync(dir)).toEqual(['full']);
  }, 60_000);

  it('a symbolic link is written through as > writes it (its target keeps its inode, never replaced by a rename); a link to nothing is refused before the call', async () => {
    const { symlinkSync, writeFileSync } = await import('node:fs');
    // Both ends in a temporary directory: a regression replaces a file of this test, never one of the machine's.
    const dir = join(temp.dir, 'links');
    mkdirSync(dir);
    const target = join(dir, 'target.txt');
    writeFileSync(target, 'old');
    const link = join(dir, 'link');
    symlinkSync('target.txt', link);
    const inode = statSync(target).ino;
    const saved = await cli(['call', 'big', '--url', fast.url, '--output', link]);
    expect(saved.code, saved.stderr).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(statSync(target).ino).toBe(inode); // renamed onto, it would be a new inode
    expect(readFileSync(target).equals(Buffer.from(`${BIG}\n`, 'utf8'))).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(['link', 'target.txt']);

    const dangling = join(dir, 'dangling');
    symlinkSync('missing.txt', dangling);
    const refused = await cli(['call', 'big', '--url', fast.url, '--output', dangling]);
    expect(refused.code, refused.stderr).toBe(64);
    expect(refused.stderr).toContain(`--output ${dangling}: cannot write there (ENOENT`);
    expect(refused.stderr).not.toContain('created'); // refused before the call: no task
    expect(lstatSync(dangling).isSymbolicLink()).toBe(true);
    expect(existsSync(join(dir, 'missing.txt'))).toBe(false);
  }, 60_000);

  it.each([
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const)(
    '%s during the read-back removes the files beside FILE and ends the CLI by the signal (%i in a shell)',
    async (name, code) => {
      const dir = join(temp.dir, `stopped-${name}`);
      mkdirSync(dir);
      let release = (): void => {};
      const released = new Promise<void>((resolveRelease) => (release = resolveRelease));
      try {
        const reached = new Promise<void>((resolveReached) => (holdReads = { reached: resolveReached, released }));
        const running = start(['call', 'big', '--url', fast.url, '--output', join(dir, 'out.txt')]);
        await reached; // the new file and the structured spool are beside FILE now
        expect(readdirSync(dir).length).toBeGreaterThan(0);
        running.child.kill(name);
        const stopped = await running.done;
        expect(readdirSync(dir)).toEqual([]);
        // Ended by the signal itself, after its cleanup: a shell reports 128 + its number.
        expect([stopped.code, running.child.signalCode], stopped.stderr).toEqual([null, name]);
        expect(128 + osConstants.signals[name]).toBe(code);
        expect(stopped.stderr).toContain(`stopped by ${name}; --output ${join(dir, 'out.txt')} was not written (nothing left beside it)`);
      } finally {
        holdReads = undefined;
        release();
      }
    },
    60_000,
  );

  it('Ctrl-C during the copy into a FIFO whose reader has stopped reading ends the CLI at once (130), leaving nothing in $TMPDIR', async () => {
    const dir = join(temp.dir, 'stuck-fifo');
    const spools = join(dir, 'tmp');
    mkdirSync(spools, { recursive: true });
    const fifo = join(dir, 'out');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    // A reader that opens the FIFO and never reads: the copy fills the pipe and blocks in write().
    const reader = reaped(spawn('sh', ['-c', 'exec 3<"$0"; exec sleep 600', fifo], { stdio: 'ignore' }));
    try {
      const running = cliRunner({ ...env, TMPDIR: spools }).start(['call', 'big', '--url', fast.url, '--output', fifo]);
      // Until the CLI has the FIFO open: the read-back is over and the copy has begun.
      const pid = running.child.pid!;
      const holdsFifo = (): boolean => {
        try {
          return readdirSync(`/proc/${pid}/fd`).some((fd) => {
            try {
              return readlinkSync(`/proc/${pid}/fd/${fd}`) === fifo;
            } catch {
              return false;
            }
          });
        } catch {
          return false;
        }
      };
      while (!holdsFifo() && running.child.exitCode === null) await new Promise((resolveWait) => setTimeout(resolveWait, 20));
      expect(running.child.exitCode, 'the CLI ended before it opened the FIFO').toBe(null);
      expect(readdirSync(spools).length).toBeGreaterThan(0); // the spool being copied
      running.child.kill('SIGINT');
      const interrupted = await running.done;
      expect([interrupted.code, running.child.signalCode], interrupted.stderr).toEqual([null, 'SIGINT']); // 130 in a shell
      expect(interrupted.stderr).toContain(`interrupted; --output ${fifo} may hold part of the result (it is written in place) (nothing left beside it)`);
      expect(readdirSync(spools)).toEqual([]);
      expect(statSync(fifo).isFIFO()).toBe(true);
    } finally {
      reader.kill();
    }
  }, 60_000);
});
