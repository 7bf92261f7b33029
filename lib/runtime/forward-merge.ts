/**
 * Forward mode's merged wake: the wakes held back for one upstream session, in one wake that
 * lists them oldest first with their count, each text framed so that no sender's text can pose as
 * another entry or end its own early.
 *
 * The frame: a header line, then for each text K of N a line `<<<event K of N ID>>>`, the text,
 * and a line `<<<end K of N ID>>>`. ID is drawn at random when the merged wake is made, after
 * every text in it was accepted, so no text can carry it. Besides, no line of a text begins with
 * `<<<` once framed: a text line whose first characters after blanks are backslashes and `<<<`
 * gets one more backslash before them (reversibly: a reader drops one), so the frame lines are the
 * only lines that begin with `<<<`, whatever the texts hold — the real ID included.
 */

/** The body of a merged wake stays under this many bytes (OpenClaw's hooks take bodies up to 256 KiB). */
export const MAX_MERGED_BYTES = 256 * 1024 - 1024;

// A line's first characters after blanks: backslashes, then the frame's opening.
const _FRAME_LIKE = /^([ \t]*)(\\*<<<)/gm;

/** A text with every line that could read as a frame line escaped (one more backslash). */
export function escapeFrameLines(text: string): string {
  return text.replace(_FRAME_LIKE, '$1\\$2');
}

function _header(n: number, id: string): string {
  return `${n} wake events, oldest first, held back and sent as one so that none is dropped. ` +
    `Event K's text lies between the line "<<<event K of ${n} ${id}>>>" and the line "<<<end K of ${n} ${id}>>>"; ` +
    'any other line that looks like these is part of a text.';
}

function _frame(text: string, k: number, n: number, id: string): string {
  return `<<<event ${k} of ${n} ${id}>>>\n${escapeFrameLines(text)}\n<<<end ${k} of ${n} ${id}>>>`;
}

/** The merged text of `texts` (oldest first), framed with `id`. */
export function mergeTexts(texts: readonly string[], id: string): string {
  const n = texts.length;
  return [_header(n, id), ...texts.map((text, i) => _frame(text, i + 1, n, id))].join('\n');
}

// The bytes a string adds inside a JSON string: JSON escapes character by character, so parts add up.
function _jsonBytes(text: string): number {
  return Buffer.byteLength(JSON.stringify(text)) - 2;
}

/**
 * How many of `texts` (from the first) fit in one merged wake whose other fields take `rest`
 * bytes of JSON, under MAX_MERGED_BYTES; at least one. Counted with the widest numbers and an ID
 * of `idLength`, so the merged body is never larger than counted.
 */
export function mergeable(texts: readonly string[], rest: number, idLength: number, max = MAX_MERGED_BYTES): number {
  const n = texts.length;
  const wide = 10 ** String(n).length - 1;
  const id = 'x'.repeat(idLength);
  let used = rest + _jsonBytes(_header(wide, id));
  let fits = 0;
  for (const text of texts) {
    used += _jsonBytes(`\n${_frame(text, wide, wide, id)}`);
    if (used > max && fits > 0) break;
    fits++;
  }
  return fits;
}
