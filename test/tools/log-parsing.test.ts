import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { logFileSelector } from '../../src/tools/analyze-logs/files.js';
import { FileLineParser } from '../../src/tools/analyze-logs/line.js';
import { maskedTokens } from '../../src/tools/analyze-logs/masking.js';
import { type LogCluster, TemplateMiner, templateText } from '../../src/tools/analyze-logs/miner.js';
import { impliedSeverity, parseSeverity } from '../../src/tools/analyze-logs/severity.js';
import { epochOfMatch, findTimestamp, YearResolver } from '../../src/tools/analyze-logs/timestamp.js';
import { highCardinalityLines } from './helpers.js';

const NOW = Date.UTC(2025, 5, 15, 12, 0, 0);

/** The epoch of the timestamp at the head of `line`, year-less dates placed before NOW. */
function stampOf(line: string): number | null {
  const match = findTimestamp(line);
  return match && epochOfMatch(match, new YearResolver(NOW));
}

describe('timestamps', () => {
  const cases: [string, string][] = [
    ['2024-01-02T03:04:05Z hello', '2024-01-02T03:04:05.000Z'],
    ['2024-01-02T03:04:05.678+02:00 hello', '2024-01-02T01:04:05.678Z'],
    ['2015-10-18 18:01:47,978 INFO [main] x', '2015-10-18T18:01:47.978Z'],
    ['2016-09-28 04:30:30, Info CBS x', '2016-09-28T04:30:30.000Z'],
    ['2024/03/01 13:55:36 [error] 12#0: x', '2024-03-01T13:55:36.000Z'],
    ['- 1117838570 2005.06.03 R02-M1-N0 2005-06-03-15.42.50.675872 R02 RAS', '2005-06-03T22:42:50.000Z'],
    ['Jun 14 15:16:01 combo sshd(pam_unix)[19939]: x', '2025-06-14T15:16:01.000Z'],
    ['Dec 10 06:55:46 LabSZ sshd[24200]: x', '2024-12-10T06:55:46.000Z'],
    ['10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200', '2000-10-10T20:55:36.000Z'],
    ['[Sun Dec 04 04:47:44 2005] [notice] x', '2005-12-04T04:47:44.000Z'],
    ['081109 203615 148 INFO dfs.DataNode: x', '2008-11-09T20:36:15.000Z'],
    ['17/06/09 20:10:40 INFO spark.SecurityManager: x', '2017-06-09T20:10:40.000Z'],
    ['20171223-22:15:29:606|Step_LSC|30002312|x', '2017-12-23T22:15:29.606Z'],
    ['03-17 16:13:38.811  1702  2395 D WindowManager: x', '2025-03-17T16:13:38.811Z'],
    ['I0102 15:04:05.000000 1 main.go:10] x', '2025-01-02T15:04:05.000Z'],
    ['1700000000 host app: x', '2023-11-14T22:13:20.000Z'],
    ['1700000000123 x', '2023-11-14T22:13:20.123Z'],
  ];
  it.each(cases)('parses %s', (line, iso) => {
    const epochMs = stampOf(line);
    expect(epochMs === null ? null : new Date(epochMs).toISOString()).toBe(iso);
  });

  it('finds the same timestamp whichever format matched the line before (the last format is tried first)', () => {
    const fresh = cases.map(([line]) => stampOf(line));
    for (const [before] of cases) {
      cases.forEach(([line], i) => {
        stampOf(before);
        expect(stampOf(line), `${line} after ${before}`).toBe(fresh[i]);
      });
    }
  });

  it('finds nothing in lines without a timestamp or with an impossible date', () => {
    expect(findTimestamp('java.lang.NullPointerException: x')).toBeNull();
    expect(findTimestamp('\tat com.example.Foo.bar(Foo.java:10)')).toBeNull();
    expect(findTimestamp('2024-13-40T25:00:00Z nope')).toBeNull();
    expect(findTimestamp('2023-02-29T10:00:00Z not a leap year')).toBeNull();
    expect(findTimestamp('12345 short numbers')).toBeNull();
  });

  it('never rolls an impossible year-less date over into the next month', () => {
    // 30 February exists in no year: no time rather than 2 March.
    expect(stampOf('Feb 30 10:00:00 host app: x')).toBeNull();
    // 29 February: the latest leap year not after the reference time.
    expect(new Date(stampOf('Feb 29 10:00:00 host app: x') as number).toISOString()).toBe('2024-02-29T10:00:00.000Z');
  });

  it('removes the header from the message and keeps the rest', () => {
    const line = '[Sun Dec 04 04:47:44 2005] [error] mod_jk child in error state 6';
    expect(new FileLineParser([line], { referenceMs: NOW }).parse(line)).toEqual({
      epochMs: Date.UTC(2005, 11, 4, 4, 47, 44),
      severity: 'ERROR',
      message: 'mod_jk child in error state 6',
      component: null,
      continuation: false,
    });
    expect(new FileLineParser(['plain text']).parse('plain text').message).toBe('plain text');
  });
});

describe("severity of a line with a header: the message's first word, or its only one", () => {
  const parse = (lines: string[], line: string) => new FileLineParser(lines, { referenceMs: NOW }).parse(line).severity;
  const syslog = (message: string, i = 0) => `Jul  1 09:0${i}:13 host kernel[0]: ${message}`;
  const sample = Array.from({ length: 8 }, (_, i) => syslog(`ARPT: 6207${i}.90: wl0: setup ${i}`, i));
  it.each([
    ['error: disk full', 'ERROR'],
    ['WARNING: low memory', 'WARN'],
    ['[warn] slow answer', 'WARN'],
    ['Error reading block 7', 'ERROR'],
    ['warning', 'WARN'],
    ['critical', 'FATAL'],
    // A level word later in the message is text, not the line's level.
    ['ARPT: 1.5: IOPMPowerSource Information: onSleep', null],
    ['Setting BTCoex Config: enable_2G:1', null],
    ['info.example.com:80 close, 1020 bytes sent', null],
    ['the error counter was reset', null],
  ] as const)('%s → %s', (message, severity) => {
    expect(parse(sample, syslog(message))).toBe(severity);
  });
});

describe('severities', () => {
  const cases: [string, string | null][] = [
    ['2024-01-01T00:00:00Z ERROR boom', 'ERROR'],
    ['2015-07-29 17:41:44,747 - WARN  [SendWorker:1] - x', 'WARN'],
    ['2016-09-28 04:30:30, Info                  CBS    Loaded', 'INFO'],
    ['[Sun Dec 04 04:47:44 2005] [notice] x', 'INFO'],
    ['2024/03/01 13:55:36 [crit] 12#0: x', 'FATAL'],
    ['<11>Mar  1 00:00:00 host app: x', 'ERROR'],
    ['<12>1 2024-01-01T00:00:00Z host app - - x', 'WARN'],
    ['E0102 15:04:05.000000 1 main.go:10] x', 'ERROR'],
    ['W/ActivityManager(  123): Slow operation', 'WARN'],
    ['03-17 16:13:38.811  1702  2395 D WindowManager: x', 'DEBUG'],
    ['03-17 16:13:38.811  1702  2395 E AndroidRuntime: x', 'ERROR'],
    ['time=2024-01-01T00:00:00Z level=warning msg="disk"', 'WARN'],
    ['{"level":"error","msg":"x"}', 'ERROR'],
    ['Jun 14 15:16:01 combo kernel: SEVERE trouble', 'FATAL'],
    ['Jun 14 15:16:01 combo sshd[1]: connection error from 1.2.3.4', null],
    ['Jun 14 15:16:01 combo sshd[1]: error: maximum attempts', 'ERROR'],
    ['I/O error on device sda', null],
  ];
  it.each(cases)('reads %s', (line, expected) => {
    expect(parseSeverity(line, findTimestamp(line)?.end ?? 0)).toBe(expected);
  });

  const implied: [string, string | null][] = [
    ['kernel: Kernel panic - not syncing: VFS', 'FATAL'],
    ['panic: runtime error: index out of range', 'FATAL'],
    ['Out of memory: Killed process <*> (java)', 'FATAL'],
    ['EXT4-fs error (device sda1): ext4_find_entry', 'ERROR'],
    ['Traceback (most recent call last):', 'ERROR'],
    ['GET <*> HTTP/<*> 5xx', 'ERROR'],
    ['Failed password for invalid user <*> from <*>', 'WARN'],
    ['GET <*> HTTP/<*> 4xx', 'WARN'],
    ['GET <*> HTTP/<*> 2xx', 'INFO'],
    ['Build finished with 0 errors', null],
    // Issue 26 item 12: a normal boot line is no NEW ERROR; a corrected error is worth a look, not an incident.
    ['kernel: Enabling unmasked SIMD FPU exception support... done.', null],
    ['kernel: Enabling fast FPU save and restore... done.', null],
    ['ACPI: PCI error reporting enabled', null],
    ['<*> ddr error(s) detected and corrected on rank <*>, symbol <*> over <*> seconds', 'WARN'],
    ['instruction cache parity error corrected', 'WARN'],
    ['exception handling failed for <*>', 'WARN'],
    ['<*>:<*>:Got exception while serving blk_<*> to /<*>:', 'ERROR'],
    ['ciod: Error reading message prefix on CioStream socket to <*>:<*>, Connection reset by peer', 'ERROR'],
    ['Started Session <*> of user <*>', null],
  ];
  it.each(implied)('infers from the words of %s', (template, expected) => {
    expect(impliedSeverity(template)).toBe(expected);
  });
});

describe('masking', () => {
  it('masks numbers, addresses, ids and paths while keeping constant parts of tokens', () => {
    expect(
      maskedTokens(
        'PacketResponder 1 for block blk_-6952295868487656571 at 10.251.73.220:50010 sshd[24200]: uid=0 /var/log/x.log 0x1f 38101a0b-2096-447d-96ea-a692162415ae de9231d 18:01:47,978 tty=NODEVssh',
        128,
      ),
    ).toEqual(['PacketResponder', '<*>', 'for', 'block', 'blk_<*>', 'at', '<*>', 'sshd[<*>]:', 'uid=<*>', '<*>', '<*>', '<*>', '<*>', '<*>', 'tty=NODEVssh']);
  });

  it('keeps the brackets a wholly variable token opens or closes, so templates stay balanced (issue 26 item 12)', () => {
    expect(maskedTokens('Process com.x:qzone (pid 12236) has died', 128)).toEqual(['Process', 'com.x:qzone', '(pid', '<*>)', 'has', 'died']);
    expect(maskedTokens('nodes:node-[224\\ 228\\ 232] bytes (0.39 KB) sent', 128)).toEqual([
      'nodes:node-[<*>\\',
      '<*>',
      '<*>]',
      'bytes',
      '(<*>',
      '<*>)',
      'sent',
    ]);
    // Brackets matched inside the token go with it; a path keeps the one it closes.
    expect(maskedTokens('(1) [/var/www/html] (run-parts /etc/cron.hourly)', 128)).toEqual(['<*>', '<*>', '(run-parts', '<*>)']);
    expect(maskedTokens('/var/log/x.log: denied ("/a/b"),', 128)).toEqual(['<*>:', 'denied', '"<*>",']);
    expect(maskedTokens('[467587.551743] 1{2{ 3]4] (5)6', 128)).toEqual(['<*>', '<*>{{', '<*>]]', '<*>']);
    // Quotes around a value stay: `open() "/usr/share/x.html" failed`.
    expect(maskedTokens('open() "/usr/share/x.html" failed ("42")', 128)).toEqual(['open()', '"<*>"', 'failed', '"<*>"']);
  });

  it('splits on whitespace as `\\s+` does, whatever the kind and run of whitespace (property)', () => {
    const space = fc.constantFrom(' ', '  ', '\t', '\n', '\v', '\f', '\r', '\u00a0', '\u1680', '\u2003', '\u2028', '\u202f', '\u3000', '\ufeff');
    const word = fc.constantFrom('a', 'tag="View', 'Lock",', 'x=1', '12', 'KB', 'sec', '(0.39', '/var/x', 'a\\042b', '\u0085', '\u200b', 'é');
    fc.assert(
      fc.property(fc.array(fc.tuple(space, word), { maxLength: 14 }), space, (pairs, last) => {
        const message = pairs.map(([s, w]) => s + w).join('') + last;
        const single = pairs.map(([, w]) => w).join(' ');
        expect(maskedTokens(message, 128)).toEqual(maskedTokens(single, 128));
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps a quoted value of a key with spaces in one token, so that it does not change the message length', () => {
    expect(maskedTokens('acquire lock=1, tag="View Lock", name=x', 128)).toEqual(['acquire', 'lock=<*>,', 'tag="View Lock",', 'name=x']);
    // Without a closing quote nearby, the words stay words.
    expect(maskedTokens('tag="a b c d e f g h i j k', 128)).toHaveLength(11);
  });

  it('caps the number of tokens', () => {
    expect(maskedTokens('a b c d e', 3)).toEqual(['a', 'b', 'c']);
    expect(maskedTokens('   ', 3)).toEqual([]);
  });
});

describe('template miner', () => {
  it('groups messages that differ in variable positions and keeps distinct events apart', () => {
    const miner = new TemplateMiner();
    const ids = [
      'Accepted password for 1001 from 10.0.0.1 port 22 ssh2',
      'Accepted password for 1002 from 10.0.0.2 port 2222 ssh2',
      'Failed password for invalid user 7 from 10.0.0.3 port 22 ssh2',
      'Failed password for invalid user 8 from 10.0.0.4 port 22 ssh2',
      'Accepted password for 1003 from 10.0.0.5 port 1 ssh2',
      'Connection closed',
    ].map((message) => miner.add(message).id);
    expect(ids).toEqual([1, 1, 2, 2, 1, 3]);
    expect(miner.clusters().map((c) => [templateText(c), c.count, c.example])).toEqual([
      ['Accepted password for <*> from <*> port <*> ssh<*>', 3, 'Accepted password for 1001 from 10.0.0.1 port 22 ssh2'],
      ['Failed password for invalid user <*> from <*> port <*> ssh<*>', 2, 'Failed password for invalid user 7 from 10.0.0.3 port 22 ssh2'],
      ['Connection closed', 1, 'Connection closed'],
    ]);
  });

  it('keeps word variants apart (VM Started / Stopped) until a position shows more than four words (three lower-case names), then merges them', () => {
    const merges: [number, number][] = [];
    const miner = new TemplateMiner({ onMerge: (from, into) => merges.push([from.id, into.id]) });
    for (const state of ['Started', 'Paused', 'Resumed', 'Stopped', 'Started']) miner.add(`[instance: 42] VM ${state} (Lifecycle Event)`);
    expect(miner.clusters().map((c) => [templateText(c), c.count])).toEqual([
      ['[instance: <*>] VM Started (Lifecycle Event)', 2],
      ['[instance: <*>] VM Paused (Lifecycle Event)', 1],
      ['[instance: <*>] VM Resumed (Lifecycle Event)', 1],
      ['[instance: <*>] VM Stopped (Lifecycle Event)', 1],
    ]);
    const users = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank'].map((user) => miner.add(`session opened for user ${user} by (uid=0)`));
    // Issue 26 item 13: lower-case words at one position are names; the fourth distinct user shows the position is a
    // variable: one template, the earlier variants merged into it (Linux: session opened for user cyrus / news / test / root).
    expect(
      miner
        .clusters()
        .filter((c) => templateText(c).startsWith('session'))
        .map((c) => [templateText(c), c.count]),
    ).toEqual([['session opened for user <*> by (uid=<*>)', 6]]);
    const survivor = users[0] as LogCluster;
    expect(merges.filter(([, into]) => into === survivor.id).map(([from]) => from)).toEqual(users.slice(1, 3).map((c) => c.id));
    expect(new Set(users.slice(3).map((c) => c.id))).toEqual(new Set([survivor.id]));
  });

  it('issue 26 item 13: four lower-case names at one position make one template, four capitalised states or status classes four', () => {
    const miner = new TemplateMiner();
    for (const user of ['cyrus', 'news', 'test', 'root']) miner.add(`session closed for user ${user}`);
    for (const reason of ['RoamFail', 'AssocFail', 'DeauthInd', 'AuthFail']) miner.add(`Received Capture notice id: 7, reason = ${reason}:sts:0_rsn:7`);
    for (const status of ['2xx', '3xx', '4xx', '5xx']) miner.add(`GET /index.html HTTP/1.1 ${status}`);
    expect(miner.clusters().map((c) => templateText(c))).toEqual([
      'session closed for user <*>',
      'Received Capture notice id: <*> reason = RoamFail:sts:<*>_rsn:<*>',
      'Received Capture notice id: <*> reason = AssocFail:sts:<*>_rsn:<*>',
      'Received Capture notice id: <*> reason = DeauthInd:sts:<*>_rsn:<*>',
      'Received Capture notice id: <*> reason = AuthFail:sts:<*>_rsn:<*>',
      'GET <*> HTTP/<*> 2xx',
      'GET <*> HTTP/<*> 3xx',
      'GET <*> HTTP/<*> 4xx',
      'GET <*> HTTP/<*> 5xx',
    ]);
    // Negative control: with names allowed as many values as other words, the four users stay four templates.
    const wide = new TemplateMiner({ maxNameValues: 4 });
    for (const user of ['cyrus', 'news', 'test', 'root']) wide.add(`session closed for user ${user}`);
    expect(wide.clusters()).toHaveLength(4);
  });

  it('issue 26 item 13: a word of letters added to a masked token makes another variant (LOGIN(uid=0) / (uid=0)); a numbered part added to a name does not', () => {
    const miner = new TemplateMiner();
    miner.add('session opened for user root by LOGIN(uid=0)');
    miner.add('session opened for user root by (uid=0)');
    miner.add('Block broadcast_1 stored as bytes in memory');
    miner.add('Block broadcast_1_piece0 stored as bytes in memory');
    expect(miner.clusters().map((c) => [templateText(c), c.count])).toEqual([
      ['session opened for user root by LOGIN(uid=<*>)', 1],
      ['session opened for user root by (uid=<*>)', 1],
      ['Block <*> stored as bytes in memory', 2],
    ]);
  });

  it('keeps the key of a key=value position it makes variable, so that later values of the key still join (tag="<*>",)', () => {
    const miner = new TemplateMiner();
    const values = [
      ['"a.b.Lock"', 'com.android.phone', 'null'],
      ['"c.d.Wake"', 'com.android.systemui', 'WorkSource{10111}'],
      ['"e.f.Audio"', 'com.tencent.mm', 'WorkSource{10020}'],
    ];
    for (const [tag, name, ws] of values) miner.add(`acquire lock=60373518, flags=0x1, tag=${tag}, name=${name}, ws=${ws}, uid=1001, pid=2626`);
    expect(miner.clusters().map((c) => [templateText(c), c.count])).toEqual([
      ['acquire lock=<*>, flags=<*>, tag="<*>", name=<*>, ws=<*>, uid=<*>, pid=<*>', 3],
    ]);
  });

  it('treats word values of one key as it treats words: variants until a position shows more than four', () => {
    const miner = new TemplateMiner();
    for (const user of ['root', 'guest', 'root', 'test'])
      miner.add(`authentication failure; logname= uid=0 euid=0 tty=NODEVssh ruser= rhost=10.0.0.1  user=${user}`);
    expect(miner.clusters().map((c) => [templateText(c), c.count])).toEqual([
      ['authentication failure; logname= uid=<*> euid=<*> tty=NODEVssh ruser= rhost=<*> user=root', 2],
      ['authentication failure; logname= uid=<*> euid=<*> tty=NODEVssh ruser= rhost=<*> user=guest', 1],
      ['authentication failure; logname= uid=<*> euid=<*> tty=NODEVssh ruser= rhost=<*> user=test', 1],
    ]);
    for (const user of ['news', 'cyrus']) miner.add(`authentication failure; logname= uid=0 euid=0 tty=NODEVssh ruser= rhost=10.0.0.1  user=${user}`);
    expect(miner.clusters().map((c) => [templateText(c), c.count])).toEqual([
      ['authentication failure; logname= uid=<*> euid=<*> tty=NODEVssh ruser= rhost=<*> user=<*>', 6],
    ]);
  });

  it('counts a message with a unit of time after a variable in the template without it (lifetime 00:01 / <1 sec)', () => {
    const miner = new TemplateMiner();
    const first = miner.add('proxy.example.com:5070 close, 0 bytes sent, 0 bytes received, lifetime 00:01');
    expect(miner.add('proxy.example.com:5070 close, 403 bytes sent, 426 bytes received, lifetime <1 sec')).toBe(first);
    expect(miner.clusters().map((c) => [templateText(c), c.count])).toEqual([
      ['proxy.example.com:<*> close, <*> bytes sent, <*> bytes received, lifetime <*>', 2],
    ]);
    // The unit stays in a template where every message has it.
    expect(templateText(miner.add('Took 19.05 seconds to spawn the instance.'))).toBe('Took <*> seconds to spawn the instance.');
  });

  it('finds a template of another branch whose variable keeps a bracket (MSFT <*>) @ <*>)', () => {
    const miner = new TemplateMiner();
    for (const table of ['DSDT', 'FADT', 'HPET', 'MADT', 'MCFG', 'RSDT'])
      miner.add(`${table} (v001 DELL PE BKC 0x00000001 MSFT 0x0100000e) @ 0x00000000000fd6b0`);
    expect(miner.clusters().map((c) => [templateText(c), c.count])).toEqual([['<*> (v<*> DELL PE BKC <*> MSFT <*>) @ <*>', 6]]);
  });

  it('makes a position of file names with variable parts a variable, as it does paths (…-CCIOReporter-002.xml)', () => {
    const miner = new TemplateMiner();
    for (const file of ['AirPortBrcm4360_Logs-003.txt', 'CCIOReporter-002.xml', 'io80211Family-003.pcapng']) {
      miner.add(`CCFile::captureLogRun Skipping current file Dir file [2017-07-03_16,05,51.031703]-${file}`);
    }
    expect(miner.clusters().map((c) => [templateText(c), c.count])).toEqual([['CCFile::captureLogRun Skipping current file Dir file <*>', 3]]);
  });

  it('keeps a run of punctuation marks where other messages have a variable apart (Fan speeds … **** …), but not ()', () => {
    const miner = new TemplateMiner();
    for (const speeds of ['3552 3534 3375 4245 3515 3479', '3552 3534 3375 **** 3515 3479', '3600 3534 3375 4100 3515 3479'])
      miner.add(`Fan speeds ( ${speeds} )`);
    expect(miner.clusters().map((c) => [templateText(c), c.count])).toEqual([
      ['Fan speeds ( <*> <*> <*> <*> <*> <*> )', 2],
      ['Fan speeds ( <*> <*> <*> **** <*> <*> )', 1],
    ]);
    const other = new TemplateMiner();
    const first = other.add('connection from 10.0.0.1 (a.example.net) at Mon Jun 20 03:40:59 2005');
    expect(other.add('connection from 10.0.0.2 () at Mon Jun 20 03:41:59 2005')).toBe(first);
  });

  it('joins a template of another branch that differs only in its leading token, and counts weighted replays', () => {
    const miner = new TemplateMiner();
    for (const job of ['com.apple.A.daily', 'com.apple.B.hourly', 'com.apple.C.weekly']) {
      miner.add(`${job}: scheduler_evaluate_activity told me to run this job; however, but the start time isn't for 439 seconds.`);
    }
    expect(miner.clusters().map((c) => [templateText(c), c.count])).toEqual([
      ["<*> scheduler_evaluate_activity told me to run this job; however, but the start time isn't for <*> seconds.", 3],
    ]);
    const replayed = miner.add('Cache warmed in <*> ms', 'example', 40);
    expect(miner.add('Cache warmed in 12 ms')).toBe(replayed);
    expect(replayed.count).toBe(41);
  });

  it('stays within its cluster cap by evicting the rarest groups', () => {
    const miner = new TemplateMiner({ maxClusters: 100 });
    for (let i = 0; i < 50; i++) miner.add('frequent event happened');
    for (let i = 0; i < 1000; i++)
      miner.add(`unique${String.fromCharCode(97 + (i % 26))}${i.toString(36).replace(/\d/g, 'x')} ${i % 7 === 0 ? 'q' : 'r'}word${i}`);
    expect(miner.clusters().length).toBeLessThanOrEqual(100);
    expect(miner.evicted).toBeGreaterThan(0);
    expect(miner.clusters().some((c) => templateText(c) === 'frequent event happened' && c.count === 50)).toBe(true);
  });

  it('compares a message with at most maxClustersPerLeaf groups, however many distinct messages there are', () => {
    // Random words fill the first tree levels and then all route through the wildcard branches into one leaf.
    const miner = new TemplateMiner({ maxClustersPerLeaf: 100 });
    let most = 0;
    for (const [i, line] of highCardinalityLines(20_000).entries()) {
      const before = miner.comparisons;
      // A recurring message among them keeps its group: it is never the rarest of its leaf.
      miner.add(i % 50 === 0 ? 'connection reset by peer' : line);
      most = Math.max(most, miner.comparisons - before);
    }
    expect(most).toBeLessThanOrEqual(100);
    expect(miner.clusters().find((c) => templateText(c) === 'connection reset by peer')?.count).toBe(400);
  });

  it('makes room in a full leaf by evicting its rarest group, the oldest among equals', () => {
    // No prefix tokens: every message of a length shares one leaf.
    const miner = new TemplateMiner({ prefixTokens: 0, maxClustersPerLeaf: 3 });
    for (const message of ['alpha one', 'alpha one', 'beta two', 'gamma three', 'delta four']) miner.add(message);
    expect(miner.clusters().map((c) => [templateText(c), c.count])).toEqual([
      ['alpha one', 2],
      ['gamma three', 1],
      ['delta four', 1],
    ]);
    expect(miner.evicted).toBe(1);
  });

  it('caps the stored example and computes a lazy example only for new groups', () => {
    const miner = new TemplateMiner({ maxExampleLength: 10 });
    let calls = 0;
    const example = () => {
      calls++;
      return 'x'.repeat(50);
    };
    miner.add('same message', example);
    miner.add('same message', example);
    expect(calls).toBe(1);
    expect(miner.clusters()[0]?.example).toBe(`${'x'.repeat(10)}…`);
  });
});

describe('log file selection', () => {
  it('selects log names, rotations and gzip files but not data files', () => {
    const selected = logFileSelector(null);
    for (const name of ['a.log', 'x/a.log.1', 'x/a.log.2.gz', 'syslog', 'syslog.1', 'messages.3.gz', 'x/old.gz']) {
      expect(selected(name)).toBe(true);
    }
    for (const name of ['a.csv', 'README.md', 'a.csv.gz', 'backup.tar.gz', 'x.tgz', 'catalog']) {
      expect(selected(name)).toBe(false);
    }
    expect(logFileSelector('*.txt')('deep/dir/notes.txt')).toBe(true);
    expect(logFileSelector('deep/*.txt')('deep/dir/notes.txt')).toBe(false);
  });
});

describe('syslog headers', () => {
  it('drops the host, tag and pid of a syslog header, keeping the tag as the component', () => {
    const lines = ['Jun 14 15:16:01 combo sshd(pam_unix)[19939]: authentication failure; uid=0', 'Jun 14 15:16:02 web-7 kernel: eth0: link up'];
    const parser = new FileLineParser(lines, { referenceMs: NOW });
    expect(parser.format.name).toBe('syslog');
    expect(parser.parse(lines[0] as string)).toMatchObject({ message: 'authentication failure; uid=0', component: 'sshd(pam_unix)' });
    expect(parser.parse(lines[1] as string)).toMatchObject({ message: 'eth0: link up', component: 'kernel' });
    // Other formats keep their text: only syslog has a host there.
    const iso = ['2024-01-01T00:00:00Z Connection failed: timeout', '2024-01-01T00:00:01Z Retrying in 5 s'];
    expect(new FileLineParser(iso).parse(iso[0] as string).message).toBe('Connection failed: timeout');
  });
});
