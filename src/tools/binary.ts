/**
 * Tells binary data from text by looking at bytes, not names: a tool that mines or scans lines must not read a
 * database, an archive or a core dump that a glob (or a misleading name such as `app.log`) led it to. The rule is
 * the usual one (git and grep look for a NUL; Perl's `-B` for a share of odd bytes): a block is binary when it
 * holds a NUL byte, or when more than {@link MAX_ODD_SHARE} of its bytes are neither text characters (printable
 * ASCII, tab, line breaks, form feed, backspace, ESC of terminal colours) nor part of valid UTF-8. Latin-1 text
 * stays text: its accented letters are a few percent of the bytes.
 */

/** Share of odd bytes (see the module comment) above which a block is binary. */
export const MAX_ODD_SHARE = 0.3;

/**
 * Whether `block` looks like binary data; see the module comment. Linear in the block's length.
 *
 * @param block - bytes as read (after decompression); a UTF-8 sequence cut by the block's end counts as text.
 */
export function isBinaryBlock(block: Uint8Array): boolean {
  if (block.length === 0) return false;
  if (block.indexOf(0) !== -1) return true;
  const limit = block.length * MAX_ODD_SHARE;
  let odd = 0;
  // The block read four bytes at a time where it can be (from its first 4-byte aligned address): a word of four
  // printable ASCII bytes, most of a text, has nothing odd and nothing to decode.
  const first = (4 - (block.byteOffset & 3)) & 3;
  const words = block.length >= first + 4 ? new Uint32Array(block.buffer, block.byteOffset + first, (block.length - first) >>> 2) : NO_WORDS;
  const wordsEnd = first + words.length * 4;
  for (let i = 0; i < block.length; i++) {
    // Text is decided once the bytes left could not make it binary even if all were odd.
    if (odd + (block.length - i) <= limit) return false;
    if (i >= first && i < wordsEnd && ((i - first) & 3) === 0 && isPrintableWord(words[(i - first) >>> 2] as number)) {
      i += 3;
      continue;
    }
    const byte = block[i] as number;
    if (byte < 0x80) {
      if ((byte < 0x20 && ((TEXT_CONTROLS >>> byte) & 1) === 0) || byte === 0x7f) odd++;
      continue;
    }
    const length = utf8SequenceLength(block, i);
    if (length === 0) odd++;
    else i += length - 1;
  }
  return odd > limit;
}

const NO_WORDS = new Uint32Array(0);

/**
 * Whether the four bytes of a word are all printable ASCII (0x20 to 0x7e), whatever the byte order: a byte above
 * 0x7f sets its top bit in `word`, 0x7f in `word + 0x01…` (no carry out of a byte below it), and the lowest byte
 * below 0x20 in `word - 0x20…` (no borrow into it from the bytes below it, all at least 0x20).
 */
function isPrintableWord(word: number): boolean {
  return (((word - 0x20202020) | (word + 0x01010101) | word) & 0x80808080) === 0;
}

/** Control characters found in text, as bits: backspace, tab, line feed, vertical tab, form feed, carriage return, ESC. */
const TEXT_CONTROLS = [0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1b].reduce((bits, code) => bits | (1 << code), 0);

/**
 * Length of the valid UTF-8 sequence that starts at `at` (2 to 4), or 0 when the bytes there are not one (a
 * stray continuation byte, an overlong or surrogate form, a lead byte without its continuation). A sequence cut
 * by the end of the block is taken as valid.
 */
function utf8SequenceLength(block: Uint8Array, at: number): number {
  const lead = block[at] as number;
  let length: number;
  let min = 0x80;
  let max = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) length = 2;
  else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead === 0xe0) min = 0xa0;
    else if (lead === 0xed) max = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead === 0xf0) min = 0x90;
    else if (lead === 0xf4) max = 0x8f;
  } else return 0;
  for (let k = 1; k < length; k++) {
    if (at + k >= block.length) return k;
    const next = block[at + k] as number;
    // Only the second byte has the narrowed range; the others are plain continuation bytes.
    if (k === 1 ? next < min || next > max : next < 0x80 || next > 0xbf) return 0;
  }
  return length;
}
