/**
 * Configuration files for `check_infrastructure`: a content digest, and a redacted diff against the snapshot the
 * tool kept from its last run. The snapshot keeps only the redacted text (secrets and personal data replaced), so
 * the per-owner state holds no secret; a change confined to secret values shows as "changed, no visible
 * difference". Files are read through the confinement (roots, denied paths), at most {@link MAX_FILE_BYTES}.
 */
import { createHash } from 'node:crypto';
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
}

/** What the snapshot kept of a file. */
export type KeptFile = { digest: string; bytes: number; text: string | null };

/** Reads a file (a real path inside the roots) through the confinement. @throws what opening or reading throws. */
export async function readFileState(realPath: string, confinement: Confinement): Promise<FileState> {
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
    const bytes = buffer.subarray(0, read);
    const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    let text: string | null = null;
    if (!isBinaryBlock(bytes)) {
      const redactor = new SecretRedactor();
      const redactPii = piiRedactor(DEFAULT_PII);
      // Without the usual preview: a snapshot compared run after run must not show which secret it was.
      const redacted = bytes.toString('utf8').split('\n').map((line) => redactPii(redactor.redact(line, () => '<redacted>'))).join('\n');
      text = redacted.length <= MAX_KEPT_TEXT ? redacted : null;
    }
    return { digest, bytes: size, truncated: size > MAX_FILE_BYTES, text };
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

/** Compares a file with what the snapshot kept of it. */
export function compareFile(previous: KeptFile, current: FileState, label: string): FileChange {
  if (previous.digest === current.digest) return { changed: false, diff: null, diffTruncated: false, note: null };
  if (previous.text === null || current.text === null) {
    return { changed: true, diff: null, diffTruncated: false, note: 'changed; binary or too large to show a diff' };
  }
  if (previous.text === current.text) {
    return { changed: true, diff: null, diffTruncated: false, note: 'changed only in redacted values (secrets or personal data)' };
  }
  const patch = createTwoFilesPatch(`${label} (last run)`, `${label} (now)`, previous.text, current.text, '', '', { context: 2 });
  // The two header lines of the patch name the files; the hunks follow.
  const lines = patch.split('\n').filter((line) => !line.startsWith('====')).slice(0, -1);
  const truncated = lines.length > MAX_DIFF_LINES;
  return { changed: true, diff: (truncated ? lines.slice(0, MAX_DIFF_LINES) : lines).join('\n'), diffTruncated: truncated, note: null };
}
