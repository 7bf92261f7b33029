// What every part of the inspector page builds with. Everything it shows came from strangers, so
// the page is made of elements and text nodes only: no HTML is ever parsed from data, and the
// server's Content-Security-Policy runs nothing but the page's own files.

const KEY_SLOT = 'hooks-inspector-key';
// Past this depth a JSON value is shown as one line of text: a node per level lets a few
// kilobytes of nested brackets exhaust the renderer.
const TREE_DEPTH = 8;

/** The element with the id. */
export const $ = (id) => document.getElementById(id);

/** The login's redirect hands this tab its key in the fragment (never sent to a server): it moves to the tab's own storage and leaves the address bar before anything else runs. */
export function takeKey() {
  if (!location.hash.startsWith('#login=')) return;
  sessionStorage.setItem(KEY_SLOT, location.hash.slice('#login='.length));
  history.replaceState(null, '', location.pathname + location.search);
}

/** Forgets this tab's key. */
export function dropKey() {
  sessionStorage.removeItem(KEY_SLOT);
}

/** An element with attributes and children; a child that is not a node becomes text. */
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) node.setAttribute(name, value);
  for (const child of children.flat()) node.append(child instanceof Node ? child : String(child ?? ''));
  return node;
}

/** Calls the page's API with this tab's key (every call sends it: the cookie, which the browser also sends to other programs on this host, is not enough alone); throws with the server's words. */
export async function api(path, body) {
  const headers = { 'x-inspector-key': sessionStorage.getItem(KEY_SLOT) ?? '' };
  const init = body === undefined ? { credentials: 'same-origin', headers } : {
    method: 'POST',
    credentials: 'same-origin',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  };
  const res = await fetch(path, init);
  const data = await res.json().catch(() => null);
  if (!res.ok) {
    throw new Error(data && data.error ? `${res.status} ${data.code}: ${plain(data.error)}` : `HTTP ${res.status}`);
  }
  return data;
}

/** A server message as the page shows it: a clause that names a command-line option is a terminal's advice, not this page's. */
export function plain(text) {
  return String(text ?? '').split(/;\s*/).filter((clause) => !/(^|\s)--[a-z]/.test(clause)).join('; ');
}

/** The class of a status: its hundreds, coloured (the number is always shown too). */
export function statusClass(status) {
  return `status s${String(status ?? '')[0] ?? ''}`;
}

/** A long id cut to its start (the whole id goes in the title). */
export function shortId(id) {
  const text = String(id ?? '');
  return text.length > 14 ? `${text.slice(0, 12)}…` : text;
}

/** `n thing` or `n things`. */
export function count(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

/** A table of name and value rows; empty values are left out, an object value is shown as its JSON. */
export function table(rows) {
  return el(
    'table',
    {},
    ...rows.filter(([, v]) => v !== undefined && v !== null && v !== '').map(([k, v]) =>
      el(
        'tr',
        {},
        el('th', { scope: 'row' }, k),
        el('td', {}, v instanceof Node ? v : typeof v === 'object' ? json(v) : String(v)),
      )
    ),
  );
}

// JSON.stringify throws a RangeError for a value nested too deeply.
function json(value, space) {
  try {
    return JSON.stringify(value, null, space);
  } catch {
    return '(nested too deeply to show)';
  }
}

/** The raw JSON of a value, folded: one click away, never in the way. */
export function rawJson(value, label = 'Raw JSON') {
  return el('details', { class: 'raw' }, el('summary', {}, label), el('pre', {}, json(value, 2)));
}

/**
 * A JSON value as a tree of <details>: objects and arrays fold, leaves are text, and so is
 * anything deeper than TREE_DEPTH (JSON.stringify throws a RangeError for a value nested too
 * deeply even for that: the caller shows the text it parsed instead).
 */
export function tree(value, label, depth = 0) {
  if (value === null || typeof value !== 'object' || depth >= TREE_DEPTH) {
    const leaf = el('div', {});
    if (label !== undefined) leaf.append(el('span', { class: 'k' }, `${label}: `));
    leaf.append(JSON.stringify(value));
    return leaf;
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  const open = Array.isArray(value) ? '[' : '{';
  const node = el(
    'details',
    { open: '' },
    el(
      'summary',
      {},
      label === undefined ? '' : el('span', { class: 'k' }, `${label}: `),
      `${open}${entries.length === 0 ? '' : '…'} ${entries.length} ${Array.isArray(value) ? 'items' : 'keys'}`,
    ),
  );
  for (const [k, v] of entries) node.append(tree(v, k, depth + 1));
  return node;
}

// The notice and markers the server wraps request text in before a model reads it
// (lib/untrusted/wrap.ts): four lines of notice, the opening marker with its id, the source, a blank
// line, the text, and the closing marker with the same id. Marker look-alikes inside the text were
// defused when it was wrapped, so the first closing marker with the id ends it (or the end of a
// text the server cut, which it ends with an ellipsis).
const WRAPPED =
  /SECURITY NOTICE: [^\n]*\n(?:[^\n]*\n){3}<<<EXTERNAL_UNTRUSTED_CONTENT id=([\w-]{1,64})>>>\nSource: ([^\n]*)\n\n([\s\S]*?)(\n<<<END_EXTERNAL_UNTRUSTED_CONTENT id=\1>>>|…$)/g;

/** Text a model reads, as a person reads it: each safety wrapper folded into one labelled line above the text it wraps. */
export function quoted(text) {
  const node = el('div', { class: 'quote' });
  const source = String(text ?? '');
  let at = 0;
  for (const match of source.matchAll(WRAPPED)) {
    if (match.index > at) node.append(el('pre', {}, source.slice(at, match.index)));
    const notice = match[0].slice(0, match[0].length - match[3].length - match[4].length);
    node.append(
      el(
        'details',
        { class: 'wrapper' },
        el('summary', {}, `Marked as untrusted content from ${match[2]} for the model`),
        el('pre', {}, notice),
      ),
      el('pre', {}, match[4] === '…' ? `${match[3]}…` : match[3]),
    );
    at = match.index + match[0].length;
  }
  if (at < source.length || at === 0) node.append(el('pre', {}, source.slice(at)));
  return node;
}
