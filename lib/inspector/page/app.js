// The inspector page. Everything it shows came from strangers, so it builds the page from
// elements and text nodes only: no HTML is ever parsed from data, and the
// server's Content-Security-Policy runs nothing but this file.
'use strict';

// The login's redirect hands this tab its key in the fragment (never sent to a server): it moves to
// the tab's own storage and leaves the address bar before anything else runs. Every API call sends
// it; the cookie, which the browser also sends to other programs on this host, is not enough alone.
const KEY_SLOT = 'hooks-inspector-key';
if (location.hash.startsWith('#login=')) {
  sessionStorage.setItem(KEY_SLOT, location.hash.slice('#login='.length));
  history.replaceState(null, '', location.pathname + location.search);
}

const POLL_MS = 1500;
// Past this depth a JSON value is shown as one line of text: a node per level lets a few
// kilobytes of nested brackets exhaust the renderer.
const TREE_DEPTH = 8;
const state = { selected: null, shown: '', timer: 0, pending: null, opener: null };
const $ = (id) => document.getElementById(id);

/** An element with text and children; attributes are set as properties-free strings. */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) node.setAttribute(name, value);
  for (const child of children) node.append(child instanceof Node ? child : String(child ?? ''));
  return node;
}

async function api(path, body) {
  const headers = { 'x-inspector-key': sessionStorage.getItem(KEY_SLOT) ?? '' };
  const init = body === undefined ? { credentials: 'same-origin', headers } : {
    method: 'POST',
    credentials: 'same-origin',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  };
  const res = await fetch(path, init);
  const data = await res.json().catch(() => null);
  if (!res.ok) throw new Error(data && data.error ? `${res.status} ${data.code}: ${data.error}` : `HTTP ${res.status}`);
  return data;
}

function filters() {
  const query = new URLSearchParams();
  for (const name of ['hook', 'status', 'code', 'text']) {
    const value = $(`f-${name}`).value.trim();
    if (value !== '') query.set(name, value);
  }
  return query;
}

function statusClass(status) {
  return `status s${String(status ?? '')[0] ?? ''}`;
}

// A delivery id as a row shows it: long ones cut to their start (the whole id is the title).
function shortId(id) {
  return id.length > 14 ? `${id.slice(0, 12)}…` : id;
}

function outcomeClass(text) {
  return `o-${String(text ?? '').split(/[ :]/)[0]}`;
}

function when(time) {
  const date = new Date(time);
  return Number.isNaN(date.getTime()) ? String(time ?? '') : date.toLocaleTimeString();
}

// One line under the path: the hook and mapping, the code, what it became.
function summary(entry) {
  const parts = [];
  if (entry.hook) parts.push(`hook ${entry.hook}`);
  if (entry.mapping) parts.push(`mapping ${entry.mapping}`);
  if (entry.code) parts.push(entry.code);
  if (entry.count > 1) parts.push(`×${entry.count}`);
  if (entry.replayOf) parts.push('replay');
  return parts.join(' · ');
}

async function refresh() {
  try {
    const { entries } = await api(`api/requests?${filters()}`);
    const key = JSON.stringify(entries.map((e) => [e.id, e.status, e.count]));
    $('live').textContent = `live · ${entries.length} shown · ${new Date().toLocaleTimeString()}`;
    $('loading').hidden = true;
    if (key === state.shown) return;
    state.shown = key;
    const list = $('list');
    // A new list replaces the rows: the keyboard's place in it stays on the request it was on.
    const focused = list.contains(document.activeElement) ? document.activeElement.dataset.id : null;
    list.replaceChildren(...entries.map((entry) => {
      // The provider's event and delivery id first, as senders' own pages show them; the outcome in words.
      const delivery = entry.delivery ? el('span', { class: 'delivery', title: entry.delivery }, shortId(entry.delivery)) : '';
      const button = el('button', { type: 'button', 'data-id': entry.id },
        el('span', { class: statusClass(entry.status) }, entry.status ?? '—'),
        el('span', { class: 'path' }, entry.event ? el('span', { class: 'event' }, entry.event) : '', entry.event ? ' ' : '', `${entry.method ?? ''} ${entry.path ?? ''}`),
        el('span', { class: 'when' }, when(entry.time)),
        el('span', { class: 'sub' }, el('span', { class: `tag outcome ${outcomeClass(entry.outcome)}` }, entry.outcome ?? ''), ' ', delivery, delivery ? ' · ' : '', summary(entry)));
      if (entry.id === state.selected) button.setAttribute('aria-current', 'true');
      button.addEventListener('click', () => select(entry.id));
      return el('li', {}, button);
    }));
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

// A JSON value as a tree of <details>: objects and arrays fold, leaves are text, and so is
// anything deeper than TREE_DEPTH (JSON.stringify throws a RangeError for a value nested
// too deeply even for that; bodyView then shows the body's text).
function tree(value, label, depth = 0) {
  if (value === null || typeof value !== 'object' || depth >= TREE_DEPTH) {
    const leaf = el('div', {});
    if (label !== undefined) leaf.append(el('span', { class: 'k' }, `${label}: `));
    leaf.append(JSON.stringify(value));
    return leaf;
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  const open = Array.isArray(value) ? '[' : '{';
  const node = el('details', { open: '' },
    el('summary', {}, label === undefined ? '' : el('span', { class: 'k' }, `${label}: `), `${open}${entries.length === 0 ? '' : '…'} ${entries.length} ${Array.isArray(value) ? 'items' : 'keys'}`));
  for (const [k, v] of entries) node.append(tree(v, k, depth + 1));
  return node;
}

function table(rows) {
  return el('table', {}, ...rows.filter(([, v]) => v !== undefined && v !== null && v !== '').map(([k, v]) =>
    el('tr', {}, el('th', { scope: 'row' }, k), el('td', {}, typeof v === 'object' ? JSON.stringify(v) : String(v)))));
}

// The ledger keeps a body as UTF-8 text or, when it is not, as base64.
function bodyView(entry) {
  const body = entry.body;
  if (!body) return el('p', { class: 'hint' }, `No body was kept${entry.bodyOmitted ? ` (${entry.bodyOmitted})` : ''}.`);
  const kept = body.encoding === 'utf8' ? utf8Bytes(body.data) : Math.floor(body.data.length * 3 / 4);
  const note = body.truncated ? el('p', { class: 'hint' }, `Cut: ${kept} of ${body.bytes} bytes kept.`) : '';
  if (body.encoding !== 'utf8') return el('div', {}, note, el('p', { class: 'hint' }, 'Not UTF-8 text; shown as base64:'), el('pre', {}, body.data));
  if (!body.truncated) {
    try {
      const parsed = JSON.parse(body.data);
      if (parsed !== null && typeof parsed === 'object') return el('div', { class: 'json' }, tree(parsed));
    } catch { /* not JSON, or nested too deeply to show as a tree: shown as text */ }
  }
  return el('div', {}, note, el('pre', {}, body.data));
}

function utf8Bytes(text) {
  return new TextEncoder().encode(text).length;
}

const SHOWN = new Set(['id', 'requestId', 'time', 'method', 'path', 'query', 'hook', 'mapping', 'client', 'lane', 'auth', 'status', 'code', 'error', 'durationMs', 'headers', 'body', 'bodyOmitted', 'signature', 'became', 'replayOf', 'count', 'lastTime', 'replayable', 'failed']);

async function select(id) {
  state.selected = id;
  for (const b of document.querySelectorAll('#list button')) b.setAttribute('aria-current', String(b.dataset.id === id));
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
  const replay = el('button', { type: 'button', id: 'replay', class: 'primary' }, 'Replay…');
  replay.addEventListener('click', () => confirmReplay([id], `Replay request ${id}?`, { succeeded: entry.status < 400 }));
  const rest = Object.entries(entry).filter(([k]) => !SHOWN.has(k));
  pane.replaceChildren(
    el('p', { class: 'reqline' }, `${entry.method ?? ''} ${entry.path ?? ''}`),
    el('p', {}, el('span', { class: statusClass(entry.status) }, entry.status ?? '—'), ' ', entry.code ? el('span', { class: 'tag' }, entry.code) : '', ' ', replay),
    table([['time', entry.time], ['entry id', entry.id], ['request id', entry.requestId], ['query', entry.query], ['hook', entry.hook], ['mapping', entry.mapping], ['client', entry.client], ['replay of', entry.replayOf]]),
    el('h2', {}, 'Signature'),
    entry.signature ? table(Object.entries(entry.signature)) : el('p', { class: 'hint' }, 'Not a signed hook.'),
    el('h2', {}, 'Outcome'),
    table([['status', entry.status], ['code', entry.code], ['error', entry.error], ['took', entry.durationMs === undefined ? undefined : `${entry.durationMs} ms`], ['authenticated by', entry.auth], ['times', entry.count > 1 ? `${entry.count}, the last at ${entry.lastTime}` : undefined]]),
    ...(entry.became ? [el('h2', {}, 'What it became'), el('div', { class: 'json' }, tree(entry.became))] : []),
    el('h2', {}, 'Headers'),
    entry.headers ? table(Object.entries(entry.headers)) : el('p', { class: 'hint' }, 'None kept.'),
    el('h2', {}, 'Body'),
    bodyView(entry),
    ...(rest.length > 0 ? [el('h2', {}, 'More'), table(rest)] : []),
  );
}

// Replay always shows what would happen first (a dry run), then asks.
// `succeeded`: the entry was answered with success before, so replaying it again is a choice to confirm.
async function confirmReplay(ids, title, options = {}) {
  const dialog = $('confirm');
  $('confirm-title').textContent = title;
  $('force').checked = false;
  $('force-row').hidden = true;
  $('confirm-yes').disabled = true;
  $('confirm-body').replaceChildren(el('p', { class: 'hint' }, 'Asking the server what this would become…'));
  state.pending = ids;
  state.opener = document.activeElement;
  dialog.showModal();
  $('confirm-no').focus();
  try {
    const preview = await api('api/replay', { ids, dryRun: true });
    // An entry that succeeded before (or whose replay did) is replayed again only on purpose.
    $('force-row').hidden = !options.succeeded;
    $('confirm-body').replaceChildren(el('p', {}, `${ids.length} request${ids.length === 1 ? '' : 's'}. Today's config would make of ${ids.length === 1 ? 'it' : 'them'}:`), el('div', { class: 'json' }, tree(preview)));
    $('confirm-yes').disabled = false;
  } catch (error) {
    $('confirm-body').replaceChildren(el('p', {}, `The preview failed: ${error.message}`));
  }
}

async function doReplay() {
  const ids = state.pending;
  if (!ids) return;
  $('confirm-yes').disabled = true;
  try {
    const result = await api('api/replay', { ids, dryRun: false, force: $('force').checked });
    $('confirm-body').replaceChildren(el('p', {}, 'Done:'), el('div', { class: 'json' }, tree(result)));
    // The server refuses to run again what succeeded (or whose replay did) unless forced: offer it.
    if ((result.results ?? []).some((r) => !r.ok && r.code === 'ERR_NOT_REPLAYABLE' && /force/.test(r.error))) {
      $('force-row').hidden = false;
      $('confirm-yes').disabled = false;
      return;
    }
    state.pending = null;
    state.shown = '';
    await refresh();
  } catch (error) {
    $('confirm-body').replaceChildren(el('p', {}, `Replay failed: ${error.message}`));
  }
}

async function bulk() {
  const query = filters();
  query.set('status', 'failed');
  query.set('limit', '1000');
  query.set('more', 'count');
  try {
    const { entries, more } = await api(`api/requests?${query}`);
    const ids = entries.filter((e) => e.replayable !== false).map((e) => e.id);
    if (ids.length === 0) {
      $('live').textContent = 'no failed requests to replay under these filters';
      return;
    }
    // One replay takes the newest 1,000 failures at most: the older ones are named, not dropped in silence.
    const older = more > 0 ? ` (the newest ${entries.length}; ${more} older failed request${more === 1 ? '' : 's'} not included)` : '';
    await confirmReplay(ids, `Replay ${ids.length} failed request${ids.length === 1 ? '' : 's'}?${older}`);
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

async function start() {
  try {
    await api('api/session');
  } catch (error) {
    document.body.replaceChildren(el('p', {}, `${error.message}`));
    return;
  }
  $('filters').addEventListener('input', () => { state.shown = ''; refresh(); });
  $('filters').addEventListener('submit', (event) => event.preventDefault());
  $('bulk').addEventListener('click', bulk);
  $('confirm-no').addEventListener('click', () => $('confirm').close());
  // Closed by Cancel or Escape: nothing is pending, and focus goes back where it was.
  $('confirm').addEventListener('close', () => {
    state.pending = null;
    if (state.opener && state.opener.isConnected) state.opener.focus();
  });
  $('list').addEventListener('keydown', listKeys);
  $('confirm-yes').addEventListener('click', doReplay);
  $('logout').addEventListener('click', async () => {
    await api('api/logout', {}).catch(() => null);
    sessionStorage.removeItem(KEY_SLOT);
    document.body.replaceChildren(el('p', {}, 'Logged out.'));
    clearTimeout(state.timer);
  });
  // A link to an entry (#<id>) opens it, on load or followed in this tab.
  addEventListener('hashchange', () => openLinked(location.hash));
  schedule();
  await refresh();
  await openLinked(location.hash);
}

async function openLinked(hash) {
  const id = entryIn(hash);
  if (hash.length > 1 && id === null) $('detail').replaceChildren(el('p', { class: 'hint' }, 'The address names no entry.'));
  if (id !== null && id !== state.selected) await select(id);
}

start();
