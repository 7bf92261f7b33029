// A run's own buttons in a request's detail: Retry run (a failed or timed-out run run again once,
// with the same message and options, as `hooks-ingress runs retry` does) and Redeliver (its stored
// reply sent to its channel again with no model call, as `runs redeliver` does). Each asks first
// in the page's dialog (the retry asks the server whether it would run now); answers are text.
import { api, el, plain, shortId } from './dom.js';
import { openAsk } from './replay.js';

/** The buttons a run offers (none when it offers nothing); `after` runs once one was used. */
export function runButtons(run, after) {
  const buttons = [];
  if ((run.status === 'error' || run.status === 'timeout') && !run.retriedBy) {
    buttons.push(button('Retry run…', `retry-${run.runId}`, () => openRetry(run, after)));
  }
  if (run.status === 'ok' && run.reply && run.deliver) {
    buttons.push(button('Redeliver…', `redeliver-${run.runId}`, () => openRedeliver(run, after)));
  }
  return buttons.length === 0 ? [] : [el('p', { class: 'actions-line' }, ...buttons)];
}

function button(text, id, click) {
  const b = el('button', { type: 'button', id, class: 'run-action' }, text);
  b.addEventListener('click', click);
  return b;
}

async function openRetry(run, after) {
  const asked = openAsk({
    title: `Retry run ${shortId(run.runId)}?`,
    summary: 'Asking the server whether it would run now…',
    yes: 'Retry run',
    after,
    act: async () => {
      const result = await first('api/retry', { ids: [run.runId] });
      return result.ok ? `Retried, as run ${result.run}.` : `Not retried: ${plain(result.error)}`;
    },
  });
  let check;
  try {
    check = await first('api/retry', { ids: [run.runId], check: true });
  } catch (error) {
    return asked.say([], false, `The check failed: ${error.message}`);
  }
  if (!check.ok) return asked.say([], false, `It would not run: ${plain(check.error)}`);
  asked.say(
    [
      el('p', {}, 'It runs once more as a new run, with the same message and options, under the config of now.'),
      el('p', {}, 'The model is called again, and a reply goes where this run would have sent it.'),
    ],
    true,
    'Nothing has run yet.',
  );
}

function openRedeliver(run, after) {
  const asked = openAsk({
    title: `Send the reply of run ${shortId(run.runId)} again?`,
    summary: 'Nothing has been sent yet.',
    yes: 'Redeliver',
    after,
    act: async () => {
      const result = await first('api/redeliver', { ids: [run.runId] });
      if (!result.ok) return `Not sent: ${plain(result.error)}`;
      const d = result.delivery ?? {};
      return d.status === 'delivered'
        ? `Sent to ${d.channel} ${d.to}.`
        : `Not delivered (${d.status}): ${plain(d.reason)}`;
    },
  });
  asked.say(
    [el('p', {}, 'Its stored reply goes to its channel again. No model is called.')],
    true,
  );
}

// The one result of a call for one run.
async function first(path, body) {
  const { results } = await api(path, body);
  return results?.[0] ?? { ok: false, error: 'no answer for it' };
}
