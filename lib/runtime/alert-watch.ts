// What the owner's alerts learn by looking rather than being told: forward mode's outbox entries
// that went dead (their sender notes nothing itself), and a journal that cannot be written while no
// request tries to (a full disk, permissions changed under the server). Looked at every `everyMs`.

import type { Alerts } from '../model/alerts.ts';
import { failureCode } from '../model/alerts.ts';
import type { Store } from '../store/journal/store.ts';

/** How often the store is looked at. */
export const ALERT_WATCH_MS = 10_000;

/** Starts looking; returns what stops it. Entries dead before the start are not news. */
export function watchStore(
  alerts: Alerts,
  store: Pick<Store, 'outbox' | 'writable'>,
  everyMs = ALERT_WATCH_MS,
): () => void {
  const seen = new Set(store.outbox().flatMap((e) => (e.state === 'dead' ? [e.id] : [])));
  let busy = false;
  const look = async () => {
    if (busy) return;
    busy = true;
    try {
      for (const entry of store.outbox()) {
        if (entry.state !== 'dead' || seen.has(entry.id)) continue;
        seen.add(entry.id);
        alerts.note({
          kind: 'outbox-dead',
          hook: entry.hook,
          code: failureCode(entry.lastError ?? '', entry.refusedField === undefined ? 'dead' : 'refused'),
        });
      }
      // Ids that are neither dead nor kept any more need no remembering.
      const dead = new Set(store.outbox().flatMap((e) => (e.state === 'dead' ? [e.id] : [])));
      for (const id of seen) if (!dead.has(id)) seen.delete(id);
      if (!(await store.writable())) alerts.note({ kind: 'storage', hook: '', code: 'journal not writable' });
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void look(), everyMs);
  timer.unref?.();
  return () => clearInterval(timer);
}
