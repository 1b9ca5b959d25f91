/**
 * The log parser on the real loghub 2k samples (read in place from ../shared/data/loghub, see bench/lib/loghub.mjs):
 * the header format detected per file strips exactly the header, so templates are mined on the message column,
 * and grouping the raw lines is as good as grouping the message column. The figures per system are in bench/results/
 * (`npm run bench:grouping`, e.g. 2026-12-01-log-grouping-accuracy.md); these tests guard what the issue asks for, with one setting for every system.
 */
import { describe, expect, it } from 'vitest';

import { groupingAccuracy, locateLoghub, missingDataHelp, readSystem, SYSTEMS } from '../../bench/lib/loghub.mjs';
import { FileLineParser } from '../../src/tools/analyze-logs/line.js';
import { TemplateMiner } from '../../src/tools/analyze-logs/miner.js';

const located = locateLoghub();

function data(system: string) {
  if (!located.dir) throw new Error(missingDataHelp(located.missing as string));
  return readSystem(located.dir, system);
}

const normalize = (text: string) => text.replace(/\s+/g, ' ').trim();

/** The final template of each message: templates merged later take the messages they had. */
function groups(messages: readonly string[]): number[] {
  const mergedInto = new Map<number, number>();
  const miner = new TemplateMiner({ onMerge: (from, into) => mergedInto.set(from.id, into.id) });
  const ids = messages.map((message) => miner.add(message).id);
  return ids.map((first) => {
    let id = first;
    for (let next = mergedInto.get(id); next !== undefined; next = mergedInto.get(id)) id = next;
    return id;
  });
}

describe('loghub 2k samples (real logs with ground truth)', () => {
  it('finds the data, or says where to put it', () => {
    expect(located.dir, located.dir ? '' : missingDataHelp(located.missing as string)).toBeTruthy();
  });

  it.each(SYSTEMS)('detects the header of %s: nine messages in ten are exactly the ground truth message column', (system) => {
    const truth = data(system);
    const parser = new FileLineParser(truth.raw);
    expect(parser.format.name).not.toBe('none');
    const exact = truth.raw.filter((line, i) => normalize(parser.parse(line).message) === normalize(truth.content[i] as string)).length;
    expect(exact / truth.raw.length).toBeGreaterThanOrEqual(0.9);
  });

  it('groups raw lines as well as the message column: 0.93 or better on average, no system losing more than 0.01', () => {
    const raw: number[] = [];
    for (const system of SYSTEMS) {
      const truth = data(system);
      const parser = new FileLineParser(truth.raw);
      const onRaw = groupingAccuracy(groups(truth.raw.map((line) => parser.parse(line).message)), truth.eventIds);
      const onContent = groupingAccuracy(groups(truth.content), truth.eventIds);
      expect(onRaw, system).toBeGreaterThanOrEqual(onContent - 0.01);
      raw.push(onRaw);
    }
    expect(raw.reduce((sum, ga) => sum + ga, 0) / raw.length).toBeGreaterThanOrEqual(0.93);
  });
});
