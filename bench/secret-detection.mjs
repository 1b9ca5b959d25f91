// Precision and recall of audit_repository's secret detection on the labelled corpus of test/fixtures/secret-corpus.mjs
// (planted secrets and realistic false positives; all values fake and assembled at run time).
//
// Usage: npm run bench:secrets   (or: npm run build && node bench/secret-detection.mjs [--json])
import { CORPUS, scoreCorpus } from '../test/fixtures/secret-corpus.mjs';

const { findSecrets } = await import('../dist/core/redaction.js').catch((error) => {
  console.error(`cannot load dist/ (${error.message}): run npm run build first (npm run bench:secrets does).`);
  process.exit(1);
});
const score = scoreCorpus(findSecrets);
if (process.argv.includes('--json')) {
  console.log(JSON.stringify({ ...score, rows: undefined }, null, 2));
  process.exit(0);
}
const byKind = new Map();
for (const row of score.rows) {
  const key = `${row.secret ? 'secret' : 'not a secret'}: ${row.kind}`;
  const entry = byKind.get(key) ?? { entries: 0, found: 0 };
  entry.entries++;
  if (row.found) entry.found++;
  byKind.set(key, entry);
}
console.log(`${CORPUS.length} entries: ${score.secrets} secrets, ${score.nonSecrets} look-alikes that are not secrets`);
console.log(`${'kind'.padEnd(44)} entries  reported`);
for (const [kind, { entries, found }] of [...byKind].sort()) console.log(`${kind.padEnd(44)} ${String(entries).padStart(7)}  ${String(found).padStart(8)}`);
console.log(`precision ${score.precision.toFixed(3)} (${score.truePositives} of ${score.truePositives + score.falsePositives} reported entries are secrets)`);
console.log(`recall    ${score.recall.toFixed(3)} (${score.truePositives} of ${score.secrets} secrets reported)`);
if (score.missed.length > 0) console.log(`missed: ${score.missed.join(', ')}`);
if (score.falseAlarms.length > 0) console.log(`false alarms: ${score.falseAlarms.join(', ')}`);
