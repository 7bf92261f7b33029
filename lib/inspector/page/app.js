// The inspector page: the live list of requests, one request in detail, and the replay dialog
// (replay.js). What it shows is built from elements and text nodes only (dom.js).
import { $, api, dropKey, el, rawJson, shortId, statusClass, table, takeKey, tree } from './dom.js';
import { openReplay, openResolve, wireReplay } from './replay.js';
import { runButtons } from './runs.js';
import { startHooks } from './hooks.js';
import { becameView, replaysView, resolutionWords } from './words.js';

takeKey();

const POLL_MS = 1500;
// `version` is the last list's, for the filters it was read with: the next poll sends it, and a
// server with nothing new answers only that.
const state = { selected: null, shown: '', timer: 0, version: null, versionOf: '' };

function filters() {
  const query = new URLSearchParams();
  for (const name of ['hook', 'status', 'code', 'text']) {
    const value = $(`f-${name}`).value.trim();
    if (value !== '') query.set(name, value);
  }
  return query;
}

function outcomeClass(text) {
  return `o-${String(text ?? '').split(/[ :]/)[0]}`;
}

function when(time) {
  const date = new Date(time);
  return Number.isNaN(date.getTime()) ? String(time ?? '') : date.toLocaleTimeString();
}

// One line under the path: the hook and mapping, the code, how often, whether it is a replay.
function summary(entry) {
  const parts = [];
  if (entry.hook) parts.push(`hook ${entry.hook}`);
  if (entry.mapping) parts.push(`mapping ${entry.mapping}`);
  if (entry.code) parts.push(entry.code);
  if (entry.count > 1) parts.push(`×${entry.count}`);
  if (entry.replayOf) parts.push('replay');
  return parts.join(' · ');
}

/** The outcome in words, as a tag (its colour is never the only signal), with the cause the ledger kept: a failure's in its tag, an accepted request's beside it. */
function outcomeTag(entry) {
  const outcome = String(entry.outcome ?? '');
  const verdict = outcome.split(':')[0];
  const why = entry.why ? String(entry.why) : '';
  const merged = !why ? outcome : entry.status >= 400 ? `${verdict}: ${why}` : why.startsWith(verdict) ? why : null;
  const tag = el(
    'span',
    { class: `tag outcome ${outcomeClass(outcome)}`, title: merged ?? outcome },
    merged ?? outcome,
  );
  return merged !== null ? tag : el('span', {}, tag, ' ', el('span', { class: 'why', title: why }, why));
}

// What was done about a failure since: a tag of its own beside the outcome's (a request that did not fail has none).
function resolutionTag(entry) {
  const r = entry.resolution;
  // A request whose run was retried says so too, though the request itself was accepted.
  if (!r || (entry.status < 400 && !r.retries?.length)) return '';
  const done = r.state === 'succeeded' || r.state === 'resolved';
  return el(
    'span',
    {},
    ' ',
    el('span', { class: `tag outcome ${done ? 'o-resolved' : 'o-replayed'}` }, resolutionWords(r)),
  );
}

// What a row or a dialog names a request by: the provider's event and the request line.
function label(entry) {
  return `${entry.event ? `${entry.event} ` : ''}${entry.method ?? ''} ${entry.path ?? ''}`;
}

function row(entry) {
  // The provider's event and delivery id first, as senders' own pages show them; the outcome in words.
  const delivery = entry.delivery
    ? el('span', { class: 'delivery', title: entry.delivery }, shortId(entry.delivery))
    : '';
  const button = el(
    'button',
    { type: 'button', 'data-id': entry.id },
    el('span', { class: statusClass(entry.status) }, entry.status ?? '—'),
    el(
      'span',
      { class: 'path' },
      entry.event ? el('span', { class: 'event' }, entry.event) : '',
      entry.event ? ' ' : '',
      `${entry.method ?? ''} ${entry.path ?? ''}`,
    ),
    el('span', { class: 'when' }, when(entry.time)),
    el(
      'span',
      { class: 'sub' },
      outcomeTag(entry),
      resolutionTag(entry),
      ' ',
      delivery,
      delivery ? ' · ' : '',
      summary(entry),
    ),
  );
  if (entry.id === state.selected) button.setAttribute('aria-current', 'true');
  button.addEventListener('click', () => select(entry.id));
  return el('li', {}, button);
}

async function refresh() {
  try {
    const query = filters();
    const asked = query.toString();
    if (state.version && state.versionOf === asked) query.set('since', state.version);
    const { entries, unchanged, version } = await api(`api/requests?${query}`);
    state.version = version ?? null;
    state.versionOf = asked;
    if (unchanged) {
      $('live').textContent = `live · ${$('list').children.length} shown · ${new Date().toLocaleTimeString()}`;
      return;
    }
    const key = JSON.stringify(entries.map((e) => [e.id, e.status, e.count, e.outcome]));
    $('live').textContent = `live · ${entries.length} shown · ${new Date().toLocaleTimeString()}`;
    $('loading').hidden = true;
    if (key === state.shown) return;
    state.shown = key;
    const list = $('list');
    // A new list replaces the rows: the keyboard's place in it stays on the request it was on.
    const focused = list.contains(document.activeElement) ? document.activeElement.dataset.id : null;
    list.replaceChildren(...entries.map(row));
    $('empty').hidden = entries.length > 0;
    if (focused) [...list.querySelectorAll('button')].find((b) => b.dataset.id === focused)?.focus();
  } catch (error) {
    $('live').textContent = `not updating: ${error.message}`;
    $('loading').textContent = `Could not load the requests: ${error.message}`;
  }
}

// The list by keyboard: up and down (Home, End) move to a request and open it; Tab leaves the list.
function listKeys(event) {
  const rows = [...document.querySelectorAll('#list button')];
  const at = rows.indexOf(document.activeElement);
  if (at === -1) return;
  const to = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: rows.length - 1 }[event.key];
  if (to === undefined || rows[to] === undefined) return;
  event.preventDefault();
  rows[to].focus();
  select(rows[to].dataset.id);
}

function schedule() {
  clearTimeout(state.timer);
  state.timer = setTimeout(async () => {
    if (!document.hidden) await refresh();
    schedule();
  }, POLL_MS);
}

// The ledger keeps a body as UTF-8 text or, when it is not, as base64.
function bodyView(entry) {
  const body = entry.body;
  if (!body) {
    return el('p', { class: 'hint' }, `No body was kept${entry.bodyOmitted ? ` (${entry.bodyOmitted})` : ''}.`);
  }
  const kept = body.encoding === 'utf8'
    ? new TextEncoder().encode(body.data).length
    : Math.floor(body.data.length * 3 / 4);
  const note = body.truncated ? el('p', { class: 'hint' }, `Cut: ${kept} of ${body.bytes} bytes kept.`) : '';
  if (body.encoding !== 'utf8') {
    return el(
      'div',
      {},
      note,
      el('p', { class: 'hint' }, 'Not UTF-8 text; shown as base64:'),
      el('pre', {}, body.data),
    );
  }
  if (!body.truncated) {
    try {
      const parsed = JSON.parse(body.data);
      if (parsed !== null && typeof parsed === 'object') return el('div', { class: 'json' }, tree(parsed));
    } catch { /* not JSON, or nested too deeply to show as a tree: shown as text */ }
  }
  return el('div', {}, note, el('pre', {}, body.data));
}

// A signature's verdict in words, with the header at fault and how far off a stale timestamp was.
function signatureView(sig) {
  if (!sig) return el('p', { class: 'hint' }, 'Not a signed hook.');
  const verdict = sig.ok ? `verified (${sig.scheme})` : `not verified (${sig.scheme}): ${sig.why ?? 'invalid'}`;
  return table([['verdict', verdict], ['header', sig.header], [
    'clock skew',
    sig.skewSeconds === undefined ? undefined : `${sig.skewSeconds} s`,
  ], ['reason', sig.reason]]);
}

const SHOWN = new Set([
  'id',
  'requestId',
  'time',
  'method',
  'path',
  'query',
  'hook',
  'mapping',
  'client',
  'lane',
  'auth',
  'status',
  'code',
  'error',
  'durationMs',
  'headers',
  'body',
  'bodyOmitted',
  'signature',
  'became',
  'replayOf',
  'count',
  'lastTime',
  'replayable',
  'failed',
  'event',
  'delivery',
  'outcome',
  'cause',
  'why',
  'resolution',
  'dropped',
]);

async function select(id) {
  state.selected = id;
  for (const b of document.querySelectorAll('#list button')) {
    b.setAttribute('aria-current', String(b.dataset.id === id));
  }
  if (entryIn(location.hash) !== id) history.replaceState(null, '', `#${encodeURIComponent(id)}`);
  const pane = $('detail');
  let entry;
  try {
    entry = await api(`api/requests/${encodeURIComponent(id)}`);
  } catch (error) {
    pane.replaceChildren(el('p', { class: 'hint' }, error.message));
    return;
  }
  if (state.selected !== id) return;
  const item = { id, label: label(entry), resolution: entry.resolution };
  const resolved = ['succeeded', 'resolved'].includes(entry.resolution?.state);
  const replay = el(
    'button',
    { type: 'button', id: 'replay', class: 'primary' },
    resolved ? 'Replay again…' : 'Replay…',
  );
  replay.addEventListener('click', () => openReplay([item], `Replay request ${id}?`, reload));
  // A failure not resolved yet can be marked resolved without a replay, after a question.
  const open = entry.status >= 400 && !resolved;
  const resolve = open ? el('button', { type: 'button', id: 'resolve' }, 'Mark resolved…') : '';
  if (open) resolve.addEventListener('click', () => openResolve(item, reload));
  const rest = Object.entries(entry).filter(([k]) => !SHOWN.has(k));
  pane.replaceChildren(
    el(
      'p',
      { class: 'reqline' },
      entry.event ? el('span', { class: 'event' }, entry.event) : '',
      entry.event ? ' ' : '',
      `${entry.method ?? ''} ${entry.path ?? ''}`,
    ),
    el(
      'p',
      { class: 'actions-line' },
      el('span', { class: statusClass(entry.status) }, entry.status ?? '—'),
      ' ',
      entry.outcome ? outcomeTag(entry) : '',
      resolutionTag(entry),
      ' ',
      entry.replayable === false ? el('span', { class: 'hint' }, 'Not replayable: its body was not kept.') : replay,
      ' ',
      resolve,
    ),
    table([
      ['time', entry.time],
      ['delivery id', entry.delivery],
      ['entry id', entry.id],
      ['request id', entry.requestId],
      ['query', entry.query],
      ['hook', entry.hook],
      ['mapping', entry.mapping],
      ['client', entry.client],
      ['replay of', entry.replayOf],
    ]),
    el('h2', {}, 'Signature'),
    signatureView(entry.signature),
    el('h2', {}, 'Outcome'),
    table([
      ['status', entry.status],
      ['code', entry.code],
      ['error', entry.error],
      ['cause', entry.why],
      ['took', entry.durationMs === undefined ? undefined : `${entry.durationMs} ms`],
      ['authenticated by', entry.auth],
      ['times', entry.count > 1 ? `${entry.count}, the last at ${entry.lastTime}` : undefined],
      [
        'dropped',
        entry.dropped
          ? `at ${entry.dropped.time}: its waiting work was discarded while hook ${entry.dropped.hook} was paused`
          : undefined,
      ],
    ]),
    ...(entry.resolution
      ? [
        el('h2', {}, entry.replayOf ? "Its request's replays" : 'Replays'),
        el('div', { class: 'history' }, replaysView(entry.resolution)),
      ]
      : []),
    ...(entry.became
      ? [
        el('h2', {}, 'What it became'),
        el('div', { class: 'became' }, becameView(entry.became, (run) => runButtons(run, reload))),
      ]
      : []),
    el('h2', {}, 'Headers'),
    entry.headers ? table(Object.entries(entry.headers)) : el('p', { class: 'hint' }, 'None kept.'),
    el('h2', {}, 'Body'),
    bodyView(entry),
    ...(rest.length > 0 ? [el('h2', {}, 'More'), table(rest)] : []),
    rawJson(entry, 'The whole entry as JSON'),
  );
}

// After a replay: the list again at once, and the open request again (its replays and state may have changed).
async function reload() {
  state.shown = '';
  state.version = null;
  await refresh();
  if (state.selected !== null) await select(state.selected);
}

async function bulk() {
  const query = filters();
  // The failures not resolved, unless the filter asks for the resolved ones too (each then needs its own choice).
  if (query.get('status') !== 'failed-all') query.set('status', 'failed');
  query.set('limit', '1000');
  query.set('more', 'count');
  try {
    const { entries, more } = await api(`api/requests?${query}`);
    const items = entries.filter((e) => e.replayable !== false).map((e) => ({
      id: e.id,
      label: label(e),
      resolution: e.resolution,
    }));
    if (items.length === 0) {
      $('live').textContent = 'no failed requests to replay under these filters';
      return;
    }
    // One replay takes the newest 1,000 failures at most: the older ones are named, not dropped in silence.
    const older = more > 0
      ? ` (the newest ${entries.length}; ${more} older failed request${more === 1 ? '' : 's'} not included)`
      : '';
    await openReplay(items, `Replay ${items.length} failed request${items.length === 1 ? '' : 's'}?${older}`, reload);
  } catch (error) {
    $('live').textContent = error.message;
  }
}

// The entry a fragment names, or null (none, a login fragment, or escapes that do not decode).
function entryIn(hash) {
  if (hash.length <= 1 || hash.startsWith('#login=')) return null;
  try {
    return decodeURIComponent(hash.slice(1));
  } catch {
    return null;
  }
}

async function openLinked(hash) {
  const id = entryIn(hash);
  if (hash.length > 1 && id === null) {
    $('detail').replaceChildren(el('p', { class: 'hint' }, 'The address names no entry.'));
  }
  if (id !== null && id !== state.selected) await select(id);
}

async function start() {
  try {
    await api('api/session');
  } catch (error) {
    document.body.replaceChildren(el('p', {}, `${error.message}`));
    return;
  }
  $('filters').addEventListener('input', () => {
    state.shown = '';
    refresh();
  });
  $('filters').addEventListener('submit', (event) => event.preventDefault());
  $('bulk').addEventListener('click', bulk);
  $('list').addEventListener('keydown', listKeys);
  wireReplay();
  $('logout').addEventListener('click', async () => {
    await api('api/logout', {}).catch(() => null);
    dropKey();
    document.body.replaceChildren(el('p', {}, 'Logged out.'));
    clearTimeout(state.timer);
  });
  // A link to an entry (#<id>) opens it, on load or followed in this tab.
  addEventListener('hashchange', () => openLinked(location.hash));
  schedule();
  startHooks();
  await refresh();
  await openLinked(location.hash);
}

start();
