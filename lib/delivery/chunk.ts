// Splitting a reply at paragraph, line and word boundaries.

// Boundaries in order of preference (paragraph, line, word); a chunk is cut at the last one of the best kind that fits.
const _SEPARATORS = [['\n\n'], ['\n'], [' ', '\t']] as const;

/**
 * Splits `text` into chunks of at most `maxLength` UTF-16 code units, cutting at the last paragraph
 * break that fits, else the last line break, else the last space or tab; only a single word longer than
 * `maxLength` is cut inside, and never between the halves of a surrogate pair. The separator at a
 * cut (with the blank lines or spaces around it) is dropped, and blank chunks are never produced.
 */
export function chunkText(text: string, maxLength: number): string[] {
  if (typeof text !== 'string') throw new TypeError('Invalid text: must be a string');
  // One code unit could not hold an astral character without splitting its surrogate pair.
  if (!Number.isInteger(maxLength) || maxLength < 2) {
    throw new RangeError(`Invalid maxLength: must be an integer of at least 2, got ${String(maxLength)}`);
  }
  const chunks: string[] = [];
  let rest = text;
  while (rest.length > maxLength) {
    const [head, tail] = _cut(rest, maxLength);
    if (head.trim() !== '') chunks.push(head);
    rest = tail;
  }
  if (rest.trim() !== '') chunks.push(rest);
  return chunks;
}

function _cut(text: string, maxLength: number): [string, string] {
  for (const kind of _SEPARATORS) {
    // A separator may start at maxLength itself: the head before it still fits.
    const at = Math.max(...kind.map((separator) => text.lastIndexOf(separator, maxLength)));
    if (at > 0) {
      // Trailing whitespace carries nothing; leading line breaks (or, at a word cut, blanks) would
      // open the next message with a blank. Indentation after a line break is kept.
      const tail = text.slice(at + kind[0].length);
      return [
        text.slice(0, at).trimEnd(),
        kind[0] === ' ' ? tail.replace(/^[ \t]+/, '') : tail.replace(/^[\r\n]+/, ''),
      ];
    }
  }
  const code = text.charCodeAt(maxLength - 1);
  const at = code >= 0xd800 && code <= 0xdbff ? maxLength - 1 : maxLength;
  return [text.slice(0, at), text.slice(at)];
}
