// What the server's records say, in sentences and small tables: what a request became, what a
// replay would make of it now, and what a replay did. The raw JSON stays one click away.
import { count, el, plain, quoted, rawJson, shortId, table } from './dom.js';

/** Why a replay waits for a deliberate choice, as the server names it (lib/server/replay.ts NeedsForce). */
export const FORCE_WHY = {
  succeeded: 'it succeeded before',
  replayed: 'already replayed',
  'stale-timestamp': 'its signed timestamp was stale when it arrived (a captured delivery sent again looks the same)',
  taken: 'its delivery was accepted already',
  resolved: 'it was marked resolved',
};

/** The reason a replay needs a choice, in words; an unknown one is named as it is. */
export function forceWhy(why) {
  return FORCE_WHY[why] ?? String(why);
}

// The first line of a text, cut for a table cell; the wrapper's notice is not what a person looks for.
function gist(text) {
  const inner = /\nSource: [^\n]*\n\n([\s\S]*?)\n<<<END_EXTERNAL_UNTRUSTED_CONTENT/.exec(String(text ?? ''));
  const line = String(inner ? inner[1] : text ?? '').split('\n').find((l) => l.trim() !== '') ?? '';
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}

function where(action) {
  const target = action.target ?? {};
  const agent = action.run?.agentId ?? target.agentId;
  const session = action.run?.sessionKey ?? target.sessionKey;
  return `${agent ? ` for agent ${agent}` : ''}${session ? ` in session ${session}` : ''}`;
}

function actionWords(action) {
  if (action.kind === 'agent') return `start an agent run${where(action)}`;
  if (action.kind === 'notify') {
    const n = action.notice ?? {};
    return `send a message to ${n.channel ?? 'its channel'} ${
      n.to ?? "(the channel's default recipient)"
    }, no model involved`;
  }
  const when = action.mode === 'now' ? 'now' : 'at the next heartbeat';
  return `wake ${
    action.target && Object.keys(action.target).length > 0 ? `a session${where(action)}` : 'the main session'
  } ${when}`;
}

/** What a dry run says the request would become now: one sentence (`short`: with the text's first line, for a table). */
export function previewWords(preview, short = false) {
  const p = preview ?? {};
  if (p.signature && p.signature.ok === false) {
    return `It would be refused (${p.status}): the signature does not verify with today's secret (${
      p.signature.why ?? 'bad signature'
    }).`;
  }
  if (p.status >= 400) {
    return `It would be refused (${p.status}${p.code ? ` ${p.code}` : ''}): ${plain(p.error ?? 'no reason given')}.`;
  }
  if (p.filter === 'ignored') {
    return `${p.mapping ? `${p.mapping}'s` : 'A'} filter would ignore it (${p.status}): nothing would be done.`;
  }
  if (p.status === 204) return `Its transform would skip it (${p.status}): nothing would be done.`;
  const actions = p.actions ?? [];
  if (actions.length === 0) return `It would be answered ${p.status} and do nothing more.`;
  const said = actions.map((a) => `${actionWords(a)}${short ? ` with “${gist(a.text)}”` : ''}`).join(', and ');
  return `It would be accepted (${p.status}) and ${said}${short ? '.' : ' with:'}`;
}

/** A dry run in full, for one request: the sentence, each action's text, what would be left unfilled or logged, and the raw answer. */
export function previewView(preview) {
  const p = preview ?? {};
  const unresolved = (p.actions ?? []).flatMap((a) => a.unresolved ?? []);
  return [
    el('p', { class: 'now' }, `Today's config: ${previewWords(p)}`),
    ...(p.status < 400 ? (p.actions ?? []).map((a) => quoted(a.text)) : []),
    unresolved.length > 0
      ? el('p', { class: 'warn' }, `Placeholders that would find nothing: ${unresolved.join(', ')}`)
      : '',
    (p.warnings ?? []).length > 0 ? el('p', { class: 'hint' }, `It would log: ${p.warnings.join('; ')}`) : '',
    rawJson(p),
  ];
}

/** What a replay did, in one sentence. */
export function outcomeWords(outcome) {
  const o = outcome ?? {};
  const verdict = o.status < 400 ? 'accepted' : o.status >= 500 ? 'failed' : 'refused';
  const became = o.became ?? {};
  const made = [
    became.events?.length ? count(became.events.length, 'event') : '',
    became.runs?.length ? count(became.runs.length, 'run') : '',
    became.joined?.length ? `joined ${count(became.joined.length, 'pending run')}` : '',
    became.outbox?.length ? count(became.outbox.length, 'message forwarded', 'messages forwarded') : '',
    became.deliveries?.length ? count(became.deliveries.length, 'message to send', 'messages to send') : '',
    became.ignored ? 'ignored by the filter' : '',
    became.skipped ? 'skipped by its transform' : '',
    became.limited ? 'dropped by its rate limit' : '',
    became.heldUntil ? `held until ${plain(became.heldUntil)}` : '',
  ].filter(Boolean).join(', ');
  const why = o.status >= 400 ? `: ${plain(o.error ?? o.code ?? '')}` : made ? `: ${made}` : '';
  return `${o.status} ${verdict}${why}${o.entry ? ` (entry ${shortId(o.entry)})` : ''}`;
}

function deliveryWords(d) {
  if (d.status === 'delivered') return `to ${d.channel} ${d.to}`;
  return `${d.status === 'skipped' ? 'not sent' : `failed (${d.channel})`}: ${d.reason}`;
}

// A run as a person checks it: its state, where it ran, how it ended.
function runView(run, actions) {
  const ended = run.status === 'ok'
    ? 'finished'
    : run.status === 'error'
    ? 'failed'
    : run.status === 'timeout'
    ? 'timed out'
    : run.status;
  return el(
    'div',
    { class: 'run' },
    el('p', {}, `Agent run ${run.runId ?? ''}: ${ended ?? 'no longer kept'}`),
    table([
      ['agent', run.agentId],
      ['session', run.sessionKey],
      ['model', run.model],
      ['attempts', run.attempts],
      ['started', run.startedAt],
      ['finished', run.finishedAt],
      ['error', run.error],
      ['reply sent', run.delivery ? deliveryWords(run.delivery) : undefined],
      ['sent again', run.redeliveries?.length ? `${run.redeliveries.length}×` : undefined],
      ['retry of', run.retryOf],
      ['retried as', run.retriedBy],
    ]),
    run.message ? el('p', { class: 'label' }, 'Its message:') : '',
    run.message ? quoted(run.message) : '',
    run.reply ? el('p', { class: 'label' }, 'Its reply:') : '',
    run.reply ? quoted(run.reply) : '',
    ...(actions?.(run) ?? []),
  );
}

const NOTICE_STATE = { pending: 'waiting to be sent', delivered: 'delivered', failed: 'failed', skipped: 'not sent' };

// A notify mapping's delivery as a person checks it: where it goes, how it ended, how many sends it took.
function noticeView(notice) {
  const n = notice ?? {};
  const state = NOTICE_STATE[n.status] ?? n.status;
  return el(
    'div',
    { class: 'run' },
    el(
      'p',
      {},
      `Message ${n.deliveryId ?? ''}${n.name ? ` of notify mapping ${n.name}` : ''}, no model involved: ${state}`,
    ),
    table([
      ['channel', n.channel],
      ['recipient', n.to ?? (n.channel ? "the channel's default" : undefined)],
      ['status', state],
      ['attempts', n.attempts],
      ['accepted', n.acceptedAt],
      ['finished', n.finishedAt],
      [
        'outcome',
        n.delivery?.status === 'delivered'
          ? `sent ${deliveryWords(n.delivery)}`
          : n.delivery
          ? deliveryWords(n.delivery)
          : undefined,
      ],
      ['message ids', n.delivery?.messageIds?.join(', ')],
    ]),
    n.text ? el('p', { class: 'label' }, 'Its message:') : '',
    n.text ? quoted(n.text) : '',
  );
}

/** What a request became, in words: the events' text, each run's message and outcome, each notify delivery, the forwarded messages; the raw JSON folded below. */
export function becameView(became, actions) {
  const b = became ?? {};
  const parts = [];
  if (b.duplicateOf) {
    parts.push(
      el('p', {}, `A retry of request ${b.duplicateOf}: answered from that request's record, nothing done again.`),
    );
  }
  if (b.ignored) parts.push(el('p', {}, 'The filter ignored it: nothing was done.'));
  if (b.skipped) parts.push(el('p', {}, 'Its transform skipped it: nothing was done.'));
  if (b.limited) parts.push(el('p', {}, "Past its hook's rate limit (over: ignore): nothing was done."));
  if (b.heldUntil) parts.push(el('p', {}, `Its runs wait until ${b.heldUntil} (its hook's rate limit or budget).`));
  if (b.handshake) parts.push(el('p', {}, `A set-up handshake (${b.handshake}), answered.`));
  for (const event of b.events ?? []) {
    const target = event.agentId || event.sessionKey
      ? `session ${event.sessionKey ?? ''} of agent ${event.agentId ?? 'default'}`
      : 'the main session';
    parts.push(
      el(
        'p',
        {},
        `Event ${event.seq} in ${target}${
          event.mode ? ` (${event.mode === 'now' ? 'wake now' : 'next heartbeat'})` : ''
        }:`,
      ),
      quoted(event.text),
    );
  }
  for (const run of b.runs ?? []) parts.push(runView(run, actions));
  for (const notice of b.deliveries ?? []) parts.push(noticeView(notice));
  for (const sent of b.outbox ?? []) {
    parts.push(
      el(
        'p',
        {},
        `Forwarded upstream as ${sent.id ?? ''}: ${sent.state ?? ''}${
          sent.lastError ? ` (${plain(sent.lastError)})` : ''
        }${sent.refusedField ? `, refused for ${sent.refusedField}` : ''}`,
      ),
    );
  }
  if (parts.length === 0) parts.push(el('p', { class: 'hint' }, 'Nothing is recorded of what it became.'));
  return [...parts, rawJson(b)];
}

/** What was done about a failed request, in a few words: "resolved by replay X (200)", "resolved by delivery Y (accepted live)", "resolved by hand", "replayed 2×, not resolved". */
export function resolutionWords(resolution) {
  const r = resolution ?? {};
  const replays = r.replays ?? [];
  if (r.state === 'succeeded' && !r.by && r.retries?.length) {
    const retry = r.retries[0];
    return `resolved by retry: run ${shortId(retry.run)} retried as ${shortId(retry.as)}`;
  }
  if (r.state === 'succeeded') {
    return r.by
      ? `resolved by replay ${shortId(r.by.entry ?? `request ${r.by.requestId}`)} (${r.by.status})`
      : 'resolved by a replay';
  }
  if (r.delivery) {
    return `resolved by delivery ${shortId(r.delivery.entry ?? `request ${r.delivery.requestId}`)} (accepted ${
      r.delivery.live ? 'live' : 'by a replay'
    })`;
  }
  if (r.state === 'resolved') return 'resolved by hand';
  return `replayed ${replays.length}×, not resolved`;
}

/** A request's replays, oldest first: each a link to its own entry, its answer and when. */
export function replaysView(resolution) {
  const r = resolution ?? {};
  const replays = r.replays ?? [];
  const said = r.state === 'resolved' && !r.delivery
    ? `Marked resolved by hand${r.resolvedAt ? ` at ${r.resolvedAt}` : ''}.`
    : `${resolutionWords(r).replace(/^./, (c) => c.toUpperCase())}.`;
  const rows = replays.map((a) =>
    el(
      'tr',
      {},
      el('td', {}, a.time ?? ''),
      el(
        'td',
        {},
        a.entry ? el('a', { href: `#${encodeURIComponent(a.entry)}` }, a.entry) : `request ${a.requestId ?? ''}`,
      ),
      el('td', {}, `${a.status} ${a.status < 400 ? 'accepted' : a.status >= 500 ? 'failed' : 'refused'}`),
    )
  );
  return [
    el('p', {}, said),
    replays.length === 0 ? '' : el(
      'table',
      { class: 'replays' },
      el(
        'thead',
        {},
        el(
          'tr',
          {},
          el('th', { scope: 'col' }, 'When'),
          el('th', { scope: 'col' }, 'Replay'),
          el('th', { scope: 'col' }, 'Answer'),
        ),
      ),
      el('tbody', {}, rows),
    ),
  ];
}
