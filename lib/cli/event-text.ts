// How `hooks-ingress events` shows an event on a terminal. Event texts carry what senders wrote, so
// nothing in them may act on the terminal: control characters, line and paragraph separators and
// bidirectional overrides are shown as escapes, and only "\n" breaks a line.
import { escapeControls } from '../text.ts';
import { SOURCE_MAX, wrapUntrusted } from '../untrusted/wrap.ts';
import type { SessionEvent } from '../model/records.ts';

const INDENT = '    ';

// The shape of a wrapped block, taken from the wrapper itself so the two cannot drift apart: a
// wrap of placeholder values, each placeholder a named group at its first place and a
// back-reference after it.
const _WRAPPED = (() => {
  // The source is bounded as the wrapper bounds it: `[^\n]*` read the rest of the line again from
  // every copy of the notice's first words on it (quadratic in a line of them).
  const groups: Record<string, string> = {
    SOURCEPLACEHOLDER: `[^\\n]{0,${SOURCE_MAX}}`,
    IDPLACEHOLDER: '[\\w-]{1,64}',
    CONTENTPLACEHOLDER: '[\\s\\S]*?',
  };
  const names: Record<string, string> = {
    SOURCEPLACEHOLDER: 'source',
    IDPLACEHOLDER: 'id',
    CONTENTPLACEHOLDER: 'content',
  };
  const sample = wrapUntrusted('CONTENTPLACEHOLDER', { source: 'SOURCEPLACEHOLDER', id: 'IDPLACEHOLDER' });
  const seen = new Set<string>();
  const pattern = sample
    .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    .replace(/SOURCEPLACEHOLDER|IDPLACEHOLDER|CONTENTPLACEHOLDER/g, (found) => {
      const name = names[found]!;
      if (seen.has(found)) return `\\k<${name}>`;
      seen.add(found);
      return `(?<${name}>${groups[found]})`;
    });
  return new RegExp(pattern, 'g');
})();

/** Replaces each wrapped block of untrusted content by a short marker and the content itself. */
export function markWrapped(text: string): string {
  return text.replace(_WRAPPED, (...args: unknown[]) => {
    const { source, content } = args.at(-1) as { source: string; content: string };
    return `[untrusted ${source}] ${content}`;
  });
}

/**
 * One event as a human reads it: time, kind and source, then the text (continuation lines
 * indented); `raw` keeps a wrapped text's notice and markers instead of the short marker.
 */
export function formatEvent(event: SessionEvent, options: { raw?: boolean } = {}): string {
  const shown = options.raw === true ? event.text : markWrapped(event.text);
  const text = escapeControls(shown, true).replace(/\n/g, `\n${INDENT}`);
  // A wake for another agent or session says which; the main session's events say nothing more.
  const target = [
    event.agentId === undefined ? '' : ` agent=${event.agentId}`,
    event.sessionKey === undefined ? '' : ` session=${event.sessionKey}`,
  ].join('');
  return `${event.time}  ${escapeControls(event.kind, false)}  [${
    escapeControls(event.source + target, false)
  }]  ${text}\n`;
}
