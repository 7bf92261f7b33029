// What the inspector page reads: the ledger (followed from its files, so an open page costs a read
// of what was appended, not of the whole ledger; one entry looked up in the files by its ids,
// without parsing the rest), and for one entry what it became, from the store. A list carries the
// version it was read at; asked again with that version while nothing changed, the answer is only
// that nothing did, so a page left open on a quiet server costs a look at the files, not a list.

import { createHash } from 'node:crypto';
import type { LedgerEntry } from '../model/ledger-entry.ts';
import type { lookupEntry } from '../store/ledger/find.ts';
import { type EntryFilter, entryMatches, failed, type LedgerTail } from '../store/ledger/read.ts';
import type { Store } from '../store/journal/store.ts';
import { deliveredResolution, type Resolution, resolutionOf, resolved, rootOf } from '../model/replays.ts';
import type { DeliveryTaken } from '../edge/taken.ts';
import type { InspectorFilter, InspectorSource } from './listener.ts';
import { type RowFacts, rowFacts } from './row.ts';

export interface LedgerSourceOptions {
  tail: LedgerTail;
  /** One entry by its entry id or request id, as {@link lookupEntry} finds it. */
  find: (id: string) => ReturnType<typeof lookupEntry>;
  store:
    & Pick<Store, 'run' | 'events' | 'outboxEntry' | 'notice' | 'root' | 'changes'>
    & Partial<Pick<Store, 'dropped'>>;
  /** Replays entries, as `requests replay` does over the control channel. */
  replay: InspectorSource['replay'];
  /** Marks entries' roots resolved by hand, as `requests resolve` does. */
  resolve?: InspectorSource['resolve'];
  /** Retries runs and sends their replies again, as `runs retry` and `runs redeliver` do. */
  retry?: InspectorSource['retry'];
  redeliver?: InspectorSource['redeliver'];
  /**
   * Which request took a failed entry's delivery id (the key live dedupe reads), as the server
   * judges it now: a failure whose id another request took and was accepted with is resolved by it.
   */
  takenJudge?: () => Promise<_Judge>;
  /** Each hook's work now, from the running server. */
  hooks?: InspectorSource['hooks'];
  /** The clock a list's version counts minutes by (what is judged by time, such as a delivery id's hold, is judged again at least once a minute). */
  now?: () => number;
}

type _Judge = (entry: LedgerEntry) => DeliveryTaken | null;

// A run's message and reply as the page previews them: enough to recognise, not the whole text.
const _PREVIEW = 2000;

/** The inspector's view over a state directory's ledger and store. */
export function ledgerSource(options: LedgerSourceOptions): InspectorSource {
  const { tail, store } = options;
  const facts = _factsMemo();
  const versions = _versions(options);
  return {
    async list(filter) {
      // Taken as the files are read (the entries are taken as that read left them): what is
      // appended meanwhile is read by the next poll, whose version differs.
      const version = await versions(filter);
      if (filter.since === version) return { entries: [], unchanged: true, version };
      const takenBy = await _takenBy(options);
      const keep = _keep(filter, store, takenBy);
      const summary = _summarize(store, takenBy, options.find, facts);
      if (filter.more !== true) {
        return { entries: await Promise.all((await tail.newest(filter.limit, keep, false)).map(summary)), version };
      }
      // Read to the end, taking the first `limit` that pass and counting the rest.
      let passed = 0;
      const entries = await tail.newest(
        Number.POSITIVE_INFINITY,
        (entry) => keep(entry) && ++passed <= filter.limit,
        false,
      );
      return { entries: await Promise.all(entries.map(summary)), more: passed - entries.length, version };
    },
    async show(id) {
      const found = await options.find(id);
      if (!found.ok) return null;
      const { entry } = found;
      const takenBy = await _takenBy(options);
      return {
        ...entry,
        ...(await facts(entry)),
        replayable: entry.body !== undefined,
        became: entry.became === undefined ? undefined : _became(entry, store),
        ...(await _resolution(entry, store, takenBy, options.find)),
        ..._dropped(entry, store),
      };
    },
    replay: options.replay,
    ...(options.resolve === undefined ? {} : { resolve: options.resolve }),
    ...(options.retry === undefined ? {} : { retry: options.retry }),
    ...(options.redeliver === undefined ? {} : { redeliver: options.redeliver }),
    ...(options.hooks === undefined ? {} : { hooks: options.hooks }),
  };
}

// Its waiting work dropped while its hook was paused (`hooks-ingress drop`), when that is on record.
function _dropped(entry: LedgerEntry, store: LedgerSourceOptions['store']): { dropped?: unknown } {
  const drop = store.dropped?.(entry.requestId);
  return drop !== null && drop !== undefined && drop.hook === (entry.mapping ?? entry.hook) ? { dropped: drop } : {};
}

// The page's filters as one test of an entry, the same rules as `requests`' filters.
function _keep(
  filter: InspectorFilter,
  store: LedgerSourceOptions['store'],
  takenBy: _TakenBy,
): (entry: LedgerEntry) => boolean {
  const by: EntryFilter = {};
  if (filter.hook !== undefined) by.hook = filter.hook;
  if (filter.code !== undefined) by.code = filter.code;
  const klass = filter.status === undefined ? null : /^([1-5])xx$/i.exec(filter.status);
  if (klass !== null) by.status = { class: Number(klass[1]) };
  if (filter.status === 'failed' || filter.status === 'failed-all') by.failed = true;
  const open = filter.status === 'failed';
  const text = filter.text;
  return (entry) =>
    entryMatches(entry, by) && (text === undefined || entry.path.includes(text)) &&
    (!open || (!resolved(store.root(rootOf(entry))) && takenBy(entry) === null));
}

// The request id of another request that took a failed entry's delivery id, or `null`.
type _TakenBy = (entry: LedgerEntry) => string | null;

async function _takenBy(options: LedgerSourceOptions): Promise<_TakenBy> {
  if (options.takenJudge === undefined) return () => null;
  const judge = await options.takenJudge();
  return (entry) => {
    if (!failed(entry)) return null;
    const requestId = judge(entry)?.by?.requestId;
    return requestId === undefined || requestId === entry.requestId ? null : requestId;
  };
}

// The entry's resolution, by its root's record or, failing that, by the request that took its delivery id.
async function _resolution(
  entry: LedgerEntry,
  store: Pick<Store, 'root'>,
  takenBy: _TakenBy,
  find: LedgerSourceOptions['find'],
): Promise<{ resolution?: Resolution }> {
  const record = store.root(rootOf(entry));
  if (resolved(record)) return resolutionFor(entry, store);
  const requestId = takenBy(entry);
  if (requestId === null) return resolutionFor(entry, store);
  const found = await find(requestId);
  const taker = found.ok ? found.entry : undefined;
  return {
    resolution: deliveredResolution(rootOf(entry), {
      requestId,
      ...(taker === undefined ? {} : { entry: taker.id }),
      live: taker?.replayOf === undefined,
    }, record),
  };
}

/** `{ resolution }` when the entry's root (itself, or the request it replays) was replayed or resolved by hand; `{}` when not. */
export function resolutionFor(entry: LedgerEntry, store: Pick<Store, 'root'>): { resolution?: Resolution } {
  const record = store.root(rootOf(entry));
  return record === null ? {} : { resolution: resolutionOf(record) };
}

// The list shows a line per entry: never the headers or the body, only what a row says of them.
function _summarize(
  store: LedgerSourceOptions['store'],
  takenBy: _TakenBy,
  find: LedgerSourceOptions['find'],
  facts: (entry: LedgerEntry) => Promise<RowFacts>,
): (entry: LedgerEntry) => Promise<Record<string, unknown>> {
  return async (entry) => {
    const { headers: _headers, body: _body, ...rest } = entry;
    return {
      ...rest,
      ...(await facts(entry)),
      failed: failed(entry),
      replayable: entry.body !== undefined,
      ...(await _resolution(entry, store, takenBy, find)),
    };
  };
}

// A list's version: the ledger's, the store's, the judge's (a reload makes a new one), the minute,
// and the filter, so that a version sent with another filter never passes for this one's.
function _versions(options: LedgerSourceOptions): (filter: InspectorFilter) => Promise<string> {
  const judges = new WeakMap<_Judge, number>();
  let seen = 0;
  const now = options.now ?? Date.now;
  return async (filter) => {
    const judge = options.takenJudge === undefined ? undefined : await options.takenJudge();
    if (judge !== undefined && !judges.has(judge)) judges.set(judge, ++seen);
    const { since: _since, ...asked } = filter;
    const parts = [
      await options.tail.version(),
      options.store.changes(),
      judge === undefined ? 0 : judges.get(judge),
      Math.floor(now() / 60_000),
      JSON.stringify(asked),
    ];
    return createHash('sha256').update(parts.join('\n')).digest('base64url').slice(0, 22);
  };
}

// A row's facts are the entry's alone and an entry never changes: worked out once for each of the
// entries shown lately, not each time the page asks (they parse the body).
const _FACTS_KEPT = 4_096;

function _factsMemo(): (entry: LedgerEntry) => Promise<RowFacts> {
  const known = new Map<string, RowFacts>();
  return async (entry) => {
    const kept = known.get(entry.id);
    if (kept !== undefined) return kept;
    const facts = await rowFacts(entry);
    if (known.size >= _FACTS_KEPT) known.delete(known.keys().next().value!);
    known.set(entry.id, facts);
    return facts;
  };
}

function _clip(text: string): string {
  return text.length > _PREVIEW ? `${text.slice(0, _PREVIEW)}…` : text;
}

// A run as the page shows it, then the runs that retried it, each after the one it retries.
function _chain(id: string, store: LedgerSourceOptions['store']): Record<string, unknown>[] {
  const shown: Record<string, unknown>[] = [];
  const seen = new Set<string>();
  for (let next: string | undefined = id; next !== undefined && !seen.has(next);) {
    seen.add(next);
    const run = store.run(next);
    if (run === null) {
      shown.push({ runId: next, state: 'no longer kept' });
      break;
    }
    const one: Record<string, unknown> = { ...run };
    for (const key of ['message', 'reply'] as const) if (typeof run[key] === 'string') one[key] = _clip(run[key]);
    shown.push(one);
    next = run.retriedBy;
  }
  return shown;
}

// What the entry became, looked up now: the run's state, the events' text, the outbox entry's state.
function _became(entry: LedgerEntry, store: LedgerSourceOptions['store']): Record<string, unknown> {
  const became = entry.became!;
  const out: Record<string, unknown> = { ...became };
  // A request that joined a pending run (coalescing) is shown beside that run, as one that made it.
  const runs = [...(became.runs ?? []), ...(became.joined ?? [])];
  if (runs.length > 0) out['runs'] = runs.flatMap((id) => _chain(id, store));
  if (became.events !== undefined) {
    const wanted = new Set(became.events);
    out['events'] = store.events().filter((e) => wanted.has(e.seq));
  }
  if (became.deliveries !== undefined) {
    out['deliveries'] = became.deliveries.map((id) => {
      const notice = store.notice(id);
      if (notice === null) return { deliveryId: id, status: 'no longer kept' };
      return { ...notice, text: _clip(notice.text) };
    });
  }
  if (became.outbox !== undefined) {
    out['outbox'] = became.outbox.map((id) => store.outboxEntry(id) ?? { id, state: 'no longer kept' });
  }
  return out;
}
