// The replay dialog. It always asks the server first what each request would become now (a dry
// run), says how many it will run and how many it will skip and why, then runs only those. A
// request the server replays only on purpose (it succeeded, a replay of it did, or its signed
// timestamp was stale on arrival) gets a box of its own: "force" is sent for the ids ticked,
// never for the others, and a request that ran is never sent again from the same dialog.
import { $, api, count, el, plain, shortId } from './dom.js';
import { forceWhy, outcomeWords, previewView, previewWords } from './words.js';

// Each request in the dialog: { id, label, resolution, state, why, preview, outcome, box }, where
// state is 'run' (will run), 'offer' (skipped unless its box is ticked), 'skip' (cannot run: why),
// 'ran' (outcome) or 'failed' (the server refused it as it ran: why). `action` is what the dialog's
// main button does: a replay, or marking a request resolved.
// `opened` counts the openings: an answer that arrives for a dialog since closed is dropped.
const dialog = { rows: [], opener: null, after: null, busy: false, done: false, action: null, opened: 0 };

// The dialog opened with a title, a line under it, and its main button off until there is something to do.
function open(title, summary, action, after) {
  dialog.opened++;
  dialog.busy = false;
  dialog.done = false;
  dialog.action = action;
  dialog.after = after;
  dialog.opener = document.activeElement;
  $('confirm-title').textContent = title;
  $('confirm-summary').textContent = summary;
  $('confirm-body').replaceChildren();
  $('confirm-no').textContent = 'Cancel';
  $('confirm-yes').hidden = false;
  setYes(false, 'Replay');
  $('confirm').showModal();
  $('confirm-no').focus();
}

// A request already resolved is replayed again only on purpose, whether or not the server's dry run says so.
function implied(row) {
  const state = row.resolution?.state;
  return state === 'succeeded' ? 'replayed' : state === 'resolved' ? 'resolved' : undefined;
}

/** Opens the dialog for `items` ({ id, label, resolution }), asks for the dry run, and lets the person choose; `after` runs once something was replayed. */
export async function openReplay(items, title, after) {
  dialog.rows = items.map((item) => ({ ...item, state: 'skip', why: 'not asked yet', reason: 'not asked yet' }));
  open(title, 'Asking the server what this would become now…', run, after);
  const opened = dialog.opened;
  let results;
  try {
    ({ results } = await api('api/replay', { ids: items.map((i) => i.id), dryRun: true }));
  } catch (error) {
    if (opened === dialog.opened) $('confirm-summary').textContent = `The preview failed: ${error.message}`;
    return;
  }
  if (opened !== dialog.opened) return;
  results.forEach((result, at) => {
    const row = dialog.rows[at];
    if (!row) return;
    if (!result.ok) Object.assign(row, { state: 'skip', ...reasons(result.error) });
    else if (!result.needsForce && !implied(row)) {
      Object.assign(row, { preview: result.preview, state: 'run', why: '' });
    } else {Object.assign(row, {
        preview: result.preview,
        state: 'offer',
        ...reasons(result.skip, result.needsForce ?? implied(row)),
      });}
  });
  render(false);
}

/** Asks before marking one failed request resolved without replaying it; `after` runs once it is. */
export function openResolve(item, after) {
  const asked = openAsk({
    title: `Mark request ${item.id} resolved?`,
    summary: 'Nothing is replayed.',
    yes: 'Mark resolved',
    after,
    act: async () => {
      try {
        const { results } = await api('api/resolve', { ids: [item.id] });
        const result = results?.[0];
        return result?.ok ? 'Marked resolved.' : `Not marked: ${plain(result?.error ?? 'no answer for it')}`;
      } catch (error) {
        return `Not marked: ${error.message}`;
      }
    },
  });
  asked.say(
    [
      el(
        'p',
        {},
        `${item.label} leaves the list of failures as it is, without a replay: for a failure that can never be fixed, or one dealt with some other way.`,
      ),
      el('p', {}, 'It can still be replayed later, on purpose.'),
    ],
    true,
  );
}

/**
 * Asks before one action (a request marked resolved, a run retried, a reply sent again): the
 * dialog's main button, named `yes`, runs `act` once, whose answer (text) replaces the question;
 * `after` runs once it was asked. The handle's `say(body, ready)` sets what the dialog says and
 * whether the button may be pressed, while this dialog is still the one open.
 */
export function openAsk({ title, summary, yes, act, after }) {
  dialog.rows = [];
  open(title, summary, () => asked(yes, act), after);
  const opened = dialog.opened;
  setYes(false, yes);
  return {
    say(body, ready, line) {
      if (opened !== dialog.opened || dialog.busy) return;
      if (line !== undefined) $('confirm-summary').textContent = line;
      $('confirm-body').replaceChildren(...body);
      setYes(ready, yes);
      if (!ready) $('confirm-yes').hidden = true;
    },
  };
}

async function asked(yes, act) {
  if (dialog.busy) return;
  dialog.busy = true;
  const opened = dialog.opened;
  setYes(false, yes);
  let said;
  try {
    said = await act();
  } catch (error) {
    said = `Not done: ${error.message}`;
  }
  dialog.after?.();
  if (opened !== dialog.opened) return;
  dialog.busy = false;
  $('confirm-summary').textContent = said;
  $('confirm-body').replaceChildren();
  $('confirm-yes').hidden = true;
  $('confirm-no').textContent = 'Close';
}

/** Wires the dialog's buttons (once, at start). */
export function wireReplay() {
  $('confirm-yes').addEventListener('click', () => dialog.action?.());
  $('confirm-no').addEventListener('click', () => $('confirm').close());
  // Closed by Cancel or Escape: nothing is pending, and focus goes back where it was.
  $('confirm').addEventListener('close', () => {
    dialog.rows = [];
    if (dialog.opener && dialog.opener.isConnected) dialog.opener.focus();
  });
}

function setYes(enabled, label) {
  $('confirm-yes').disabled = !enabled;
  $('confirm-yes').textContent = label;
}

const ticked = () => dialog.rows.filter((r) => r.state === 'offer' && r.box?.checked);

// What pressing Replay would send now, and the button saying so.
function updateYes(done) {
  const runs = done ? 0 : dialog.rows.filter((r) => r.state === 'run').length;
  const n = runs + ticked().length;
  const offered = dialog.rows.some((r) => r.state === 'offer');
  $('confirm-yes').hidden = done && !offered;
  setYes(n > 0 && !dialog.busy, n > 0 ? `Replay ${n}` : 'Replay');
  $('confirm-no').textContent = done ? 'Close' : 'Cancel';
}

async function run() {
  const runs = dialog.rows.filter((r) => r.state === 'run');
  const forced = ticked();
  if (dialog.busy || runs.length + forced.length === 0) return;
  dialog.busy = true;
  const opened = dialog.opened;
  // From here on nothing is planned to run: what ran is done, what did not waits for a box.
  for (const row of runs) row.state = 'sent';
  for (const row of forced) row.state = 'sent';
  updateYes(true);
  $('confirm-summary').textContent = 'Replaying…';
  try {
    for (const [rows, force] of [[runs, false], [forced, true]]) {
      if (rows.length === 0) continue;
      const { results } = await api('api/replay', { ids: rows.map((r) => r.id), dryRun: false, force });
      rows.forEach((row, at) => settle(row, results[at]));
    }
  } catch (error) {
    for (const row of [...runs, ...forced]) {
      if (row.state === 'sent') Object.assign(row, { state: 'failed', ...reasons(`not known: ${error.message}`) });
    }
  }
  // The dialog opened again for other requests meanwhile: it is not this one's; the list still learns of what ran.
  if (opened === dialog.opened) {
    dialog.busy = false;
    render(true);
  }
  dialog.after?.();
}

// A row after the server answered for it; one it refused for a reason a choice overrides is offered again.
function settle(row, result) {
  if (!result) return Object.assign(row, { state: 'failed', why: 'no answer for it', reason: 'no answer for it' });
  if (result.ok) return Object.assign(row, { state: 'ran', outcome: result.outcome });
  if (result.needsForce) {
    return Object.assign(row, { state: 'offer', box: null, ...reasons(result.error, result.needsForce) });
  }
  return Object.assign(row, { state: 'failed', ...reasons(result.error) });
}

// Why a request waits or cannot run: for its row (the server's words, an entry's own ids in them),
// and for the tally (the reason's name, so alike requests count together).
function reasons(said, needsForce) {
  const text = plain(said);
  if (needsForce && (needsForce !== 'taken' || !text)) {
    return { why: forceWhy(needsForce), reason: forceWhy(needsForce) };
  }
  return {
    why: text,
    reason: needsForce ? forceWhy(needsForce) : text.replace(/^(a replay of )?entry [\w-]+('s)? ?/, ''),
  };
}

// How many rows there are for each reason.
function grouped(rows) {
  const n = new Map();
  for (const row of rows) n.set(row.reason, (n.get(row.reason) ?? 0) + 1);
  return n;
}

// How many rows are in each state, and why those skipped were: the table that heads the dialog.
function tally(done) {
  const rows = [];
  const by = (state) => dialog.rows.filter((r) => r.state === state);
  if (done) {
    const ran = by('ran');
    const accepted = ran.filter((r) => r.outcome.status < 400).length;
    const again = ran.length - accepted;
    rows.push([
      'Ran',
      ran.length,
      [accepted > 0 ? `${accepted} accepted` : '', again > 0 ? `${again} refused or failed again` : ''].filter(Boolean)
        .join(', '),
    ]);
    for (const [reason, n] of grouped(by('failed'))) rows.push(['Not run', n, reason]);
  } else {
    const runs = by('run');
    const refused = runs.filter((r) => r.preview?.status >= 400).length;
    rows.push([
      'Will run',
      runs.length,
      refused === 0 ? '' : `${runs.length - refused} would be accepted, ${refused} refused again`,
    ]);
  }
  for (const [reason, n] of grouped([...by('offer'), ...by('skip')])) {
    rows.push([done ? 'Skipped' : 'Will skip', n, reason]);
  }
  return el(
    'table',
    { class: 'tally' },
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        el('th', { scope: 'col' }, ''),
        el('th', { scope: 'col' }, 'Requests'),
        el('th', { scope: 'col' }, 'Why'),
      ),
    ),
    el(
      'tbody',
      {},
      rows.map(([what, n, why]) =>
        el('tr', {}, el('th', { scope: 'row' }, what), el('td', { class: 'n' }, String(n)), el('td', {}, why))
      ),
    ),
  );
}

// A request's cell: what it is, as the list shows it.
function who(row) {
  return el(
    'span',
    { title: row.id },
    row.label ? `${row.label} ` : '',
    el('span', { class: 'delivery' }, shortId(row.id)),
  );
}

function box(row) {
  const was = row.box?.checked === true;
  row.box = el('input', { type: 'checkbox', id: `force-${dialog.rows.indexOf(row)}` });
  row.box.checked = was;
  row.box.addEventListener('change', () => updateYes(dialog.done));
  return el('label', { class: 'choice', for: row.box.id }, row.box, ' Replay anyway');
}

function cell(row, done) {
  if (row.state === 'ran') return outcomeWords(row.outcome);
  if (row.state === 'run') return previewWords(row.preview, true);
  return `${done ? 'Skipped' : 'Will skip'}: ${row.why}`;
}

// The dialog's body: the tally, the requests that need a choice, and each request (folded when many).
function render(done) {
  const rows = dialog.rows;
  const single = rows.length === 1 ? rows[0] : null;
  dialog.done = done;
  $('confirm-summary').textContent = done
    ? 'Done.'
    : `${count(rows.length, 'request')}; nothing has been replayed yet.`;
  const parts = [tally(done)];
  if (single && !done && single.preview) parts.push(...previewView(single.preview));
  const offers = rows.filter((r) => r.state === 'offer');
  if (offers.length > 0) {
    parts.push(
      el(
        'p',
        {},
        single
          ? 'This request is replayed only if you choose to:'
          : `${count(offers.length, 'request')} ${
            offers.length === 1 ? 'is' : 'are'
          } replayed only if you choose to, one by one:`,
      ),
    );
    parts.push(el('ul', { class: 'offers' }, offers.map((row) => el('li', {}, who(row), ` ${row.why}. `, box(row)))));
  }
  const list = el(
    'table',
    { class: 'each' },
    el('tbody', {}, rows.map((row) => el('tr', {}, el('td', {}, who(row)), el('td', {}, cell(row, done))))),
  );
  if (!single || done) {
    parts.push(rows.length > 12 ? el('details', {}, el('summary', {}, `Each request (${rows.length})`), list) : list);
  }
  $('confirm-body').replaceChildren(...parts);
  updateYes(done);
}
