// One transcript per session key, bounded in size.

import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { Journal } from './journal.ts';

/** One message of a conversation: what a session's history gives a model, and what a turn appends. */
export interface Turn {
  role: 'user' | 'assistant';
  content: string;
}

// One turn as the transcript file keeps it.
interface _Turn extends Turn {
  time: string;
}

/**
 * Each session key's conversation, one JSON-lines file per key under `<state>/sessions`, so a
 * later run with the same key continues it. Files are rewritten to their newest turns when they
 * grow past `maxBytes`, so no transcript grows without bound.
 */
export class Transcripts {
  readonly #dir: string;
  readonly #maxBytes: number;
  readonly #now: () => number;
  // One writer per key at a time: runs of a key never interleave, but a heartbeat and a run might.
  #chains = new Map<string, Promise<unknown>>();

  constructor(stateDir: string, options: { maxBytes?: number; now?: () => number } = {}) {
    this.#dir = join(stateDir, 'sessions');
    this.#maxBytes = options.maxBytes ?? 1024 * 1024;
    this.#now = options.now ?? Date.now;
  }

  /** The newest turns of a session whose text fits in `maxChars`, oldest first. */
  history(sessionKey: string, maxChars: number): Promise<Turn[]> {
    return this.#exclusive(sessionKey, async () => {
      const { journal, records } = await Journal.open(this.#file(sessionKey));
      await journal.close();
      const turns = _newest(records as _Turn[], maxChars);
      // A cut between a question and its answer leaves an answer first, which some APIs refuse (Anthropic: 400).
      while (turns[0]?.role === 'assistant') turns.shift();
      return turns.map(({ role, content }) => ({ role, content }));
    });
  }

  /** Appends turns to a session; resolves once they are on disk. */
  append(sessionKey: string, turns: readonly Turn[]): Promise<void> {
    return this.#exclusive(sessionKey, async () => {
      const { journal, records } = await Journal.open(this.#file(sessionKey));
      try {
        const time = new Date(this.#now()).toISOString();
        const added = turns.map((t) => ({ role: t.role, content: t.content, time }));
        await journal.appendMany(added);
        if (journal.size > this.#maxBytes) {
          await journal.compact(_newest([...(records as _Turn[]), ...added], this.#maxBytes / 4));
        }
      } finally {
        await journal.close();
      }
    });
  }

  #file(sessionKey: string): string {
    // Keys are caller-chosen text: a hash makes a safe, fixed-length file name.
    return join(this.#dir, `${createHash('sha256').update(sessionKey).digest('hex').slice(0, 32)}.jsonl`);
  }

  async #exclusive<T>(key: string, work: () => Promise<T>): Promise<T> {
    const before = this.#chains.get(key) ?? Promise.resolve();
    const mine = before.catch(() => undefined).then(work);
    this.#chains.set(key, mine);
    try {
      return await mine;
    } finally {
      if (this.#chains.get(key) === mine) this.#chains.delete(key);
    }
  }
}

function _newest(turns: _Turn[], maxChars: number): _Turn[] {
  let used = 0;
  let from = turns.length;
  while (from > 0 && used + turns[from - 1]!.content.length <= maxChars) used += turns[--from]!.content.length;
  return turns.slice(from);
}
