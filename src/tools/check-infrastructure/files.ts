/**
 * Configuration files for `check_infrastructure`: a content digest, and a redacted diff against the snapshot the
 * tool kept from its last run. The snapshot keeps only the redacted text (secrets and personal data replaced), so
 * the per-owner state holds no secret. Each line that had a value redacted also keeps a tag: a salted digest of the
 * whole unredacted line (the salt is random per snapshot), so a changed secret shows in the diff as a changed line
 * ("value changed, redacted") even beside other changes, and never as an unchanged context line (issue 26 item 14).
 * Files are read through the confinement (roots, denied paths), at most {@link MAX_FILE_BYTES}.
 */
import { createHash, randomBytes } from 'node:crypto';

import { createTwoFilesPatch } from 'diff';

import { SecretRedactor } from '../../core/redaction.js';
import { isBinaryBlock } from '../binary.js';
import { DEFAULT_PII, piiRedactor } from '../pii.js';
import type { Confinement } from '../roots.js';

/** Bytes of a file read at most (a config file is small; a larger one is digested up to there). */
export const MAX_FILE_BYTES = 1024 * 1024;
/** Characters of redacted text kept in the snapshot per file; a larger file is compared by digest only. */
export const MAX_KEPT_TEXT = 64 * 1024;
/** Lines of a diff reported at most. */
export const MAX_DIFF_LINES = 200;

/** A file as read now. */
export interface FileState {
  /** `sha256:<hex>` of the bytes read. */
  digest: string;
  bytes: number;
  /** More than {@link MAX_FILE_BYTES}: digest and diff cover the head only. */
  truncated: boolean;
  /** Redacted text, or `null` for binary content or text beyond {@link MAX_KEPT_TEXT}. */
  text: string | null;
  /** Hex salt of {@link lineTags}: the previous snapshot's when there was one, so tags compare across runs. */
  salt: string;
  /** Per line of {@link text}: `''` for a line kept verbatim, else the tag of its unredacted content; `null` with `text`. */
  lineTags: string[] | null;
}

/**
 * What the snapshot kept of a file. `salt` and `lineTags` are absent in snapshots written before they existed; such
 * a snapshot compares as before (redacted texts only).
 */
export type KeptFile = { digest: string; bytes: number; text: string | null; salt?: string; lineTags?: string[] | null };

/** Marks a redacted line in the texts compared (never in what is shown). */
const TAG_SEPARATOR = '\u0000';
/** Hex characters of a line tag: 64 bits, enough to tell two values apart, too few to carry a value. */
const TAG_HEX = 16;

/** A fresh salt for a new snapshot. */
export function newSnapshotSalt(): string {
  return randomBytes(16).toString('hex');
}

function lineTag(salt: string, line: string): string {
  return createHash('sha256').update(salt).update('\u0000').update(line).digest('hex').slice(0, TAG_HEX);
}

/**
 * Reads a file (a real path inside the roots) through the confinement. `salt`: the previous snapshot's, so that the
 * line tags of both runs compare (a new one when there is none). @throws what opening or reading throws.
 */
export async function readFileState(realPath: string, confinement: Confinement, salt: string = newSnapshotSalt()): Promise<FileState> {
  const handle = await confinement.openForReading(realPath);
  try {
    const size = (await handle.stat()).size;
    const length = Math.min(size, MAX_FILE_BYTES);
    const buffer = Buffer.alloc(length);
    let read = 0;
    while (read < length) {
      const { bytesRead } = await handle.read(buffer, read, length - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return fileStateOf(buffer.subarray(0, read), size, salt);
  } finally {
    await handle.close();
  }
}

/** A change of a file since the snapshot. */
export interface FileChange {
  changed: boolean;
  /** Unified diff of the redacted texts, or `null` (no snapshot text, binary, or only secret values changed). */
  diff: string | null;
  diffTruncated: boolean;
  /** Why there is no diff for a changed file. */
  note: string | null;
}

/**
 * The state of a file from its first `bytes` (of `size` in all): digest, redacted text and line tags under `salt`.
 * Pure, so the diff can be property-tested without files.
 */
export function fileStateOf(bytes: Buffer, size: number, salt: string): FileState {
  const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  let text: string | null = null;
  let lineTags: string[] | null = null;
  if (!isBinaryBlock(bytes)) {
    const redactor = new SecretRedactor();
    const redactPii = piiRedactor(DEFAULT_PII);
    const lines = bytes.toString('utf8').split('\n');
    // Without the usual preview: a snapshot compared run after run must not show which secret it was.
    const redactedLines = lines.map((line) => redactPii(redactor.redact(line, () => '<redacted>')));
    const redacted = redactedLines.join('\n');
    if (redacted.length <= MAX_KEPT_TEXT) {
      text = redacted;
      lineTags = lines.map((line, i) => (redactedLines[i] === line ? '' : lineTag(salt, line)));
    }
  }
  return { digest, bytes: size, truncated: size > MAX_FILE_BYTES, text, salt, lineTags };
}

/** What the snapshot keeps of a file read now. */
export function keptFile(state: FileState): KeptFile {
  return { digest: state.digest, bytes: state.bytes, text: state.text, salt: state.salt, lineTags: state.lineTags };
}

/** The text diffed: each redacted line carries its tag, so two different secret values make two different lines. */
function comparable(text: string, tags: readonly string[] | null | undefined): string {
  if (!tags) return text;
  return text
    .split('\n')
    .map((line, i) => (tags[i] ? `${line}${TAG_SEPARATOR}${tags[i]}` : line))
    .join('\n');
}

/** A diff line as shown: the tag dropped; an added redacted line whose value changed says so. */
function shown(line: string): string {
  const at = line.indexOf(TAG_SEPARATOR);
  if (at < 0) return line;
  return line.startsWith('+') ? `${line.slice(0, at)}   (value changed, redacted)` : line.slice(0, at);
}

/** Compares a file with what the snapshot kept of it. */
export function compareFile(previous: KeptFile, current: FileState, label: string): FileChange {
  if (previous.digest === current.digest) return { changed: false, diff: null, diffTruncated: false, note: null };
  if (previous.text === null || current.text === null) {
    return { changed: true, diff: null, diffTruncated: false, note: 'changed; binary or too large to show a diff' };
  }
  // Tags compare only under one salt; a snapshot from before tags existed compares by redacted text alone.
  const tagged = previous.salt === current.salt && previous.lineTags !== undefined;
  const before = tagged ? comparable(previous.text, previous.lineTags) : previous.text;
  const after = tagged ? comparable(current.text, current.lineTags) : current.text;
  if (before === after) {
    return { changed: true, diff: null, diffTruncated: false, note: 'changed only in redacted values (secrets or personal data)' };
  }
  const patch = createTwoFilesPatch(`${label} (last run)`, `${label} (now)`, before, after, '', '', { context: 2 });
  // The two header lines of the patch name the files; the hunks follow.
  const lines = patch
    .split('\n')
    .filter((line) => !line.startsWith('===='))
    .slice(0, -1)
    .map(shown);
  const truncated = lines.length > MAX_DIFF_LINES;
  return { changed: true, diff: (truncated ? lines.slice(0, MAX_DIFF_LINES) : lines).join('\n'), diffTruncated: truncated, note: null };
}
