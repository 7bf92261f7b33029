// The page's list of hooks: each hook's runs executing and queued and the controls it sets (the
// data status shows), polled from api/hooks, with a Pause form and a Resume button for each paused
// hook (posted to api/pause with the tab's key, as replay posts). Text nodes only, as everywhere on
// the page (dom.js).
import { $, api, count, el } from './dom.js';

const POLL_MS = 5000;

// What one hook is doing and what it sets, or null when it is idle with nothing set.
function line(hook) {
  const doing = [];
  const paused = hook.paused;
  if (paused) doing.push(`paused${paused.until ? ` until ${new Date(paused.until).toLocaleString()}` : ''}`);
  if (hook.running > 0) doing.push(`${hook.running} running`);
  if (hook.queued > 0) doing.push(`${hook.queued} queued`);
  if (hook.coalescing > 0) doing.push(`${hook.coalescing} coalescing window${hook.coalescing === 1 ? '' : 's'} open`);
  if (paused && paused.wakes > 0) doing.push(`${count(paused.wakes, 'wake')} held`);
  if (paused && paused.outbox > 0) doing.push(`${count(paused.outbox, 'outbox entry', 'outbox entries')} waiting`);
  if (paused && paused.oldest) doing.push(`oldest waiting ${waited(paused.oldest)}`);
  const sets = [];
  if (hook.concurrency !== null && hook.concurrency !== undefined) sets.push(`concurrency ${hook.concurrency}`);
  if (hook.maxQueued !== null && hook.maxQueued !== undefined) sets.push(`maxQueued ${hook.maxQueued}`);
  if (hook.coalesce) {
    sets.push(`coalesce ${hook.coalesce.windowSeconds}s quiet, at most ${hook.coalesce.maxWaitSeconds}s`);
  }
  if (doing.length === 0 && sets.length === 0) return null;
  return `${doing.length === 0 ? 'idle' : doing.join(', ')}${sets.length === 0 ? '' : ` (${sets.join(', ')})`}`;
}

// How long ago an ISO time was, as `4m 10s`.
function waited(time) {
  const seconds = Math.max(0, Math.floor((Date.now() - Date.parse(time)) / 1000));
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  return h > 0 ? `${h}h ${m}m` : m > 0 ? `${m}m ${seconds % 60}s` : `${seconds}s`;
}

// A paused hook's Resume button.
function resumeButton(hook) {
  const button = el('button', { type: 'button', 'data-resume': hook }, 'Resume');
  button.addEventListener('click', () => change(hook, false, button));
  return button;
}

// Pauses or resumes a hook, says so, and shows the list again.
async function change(hook, pause, button) {
  button.disabled = true;
  try {
    await api('api/pause', { hook, paused: pause });
    $('hooks-said').textContent = `${pause ? 'Paused' : 'Resumed'} ${hook}.`;
  } catch (error) {
    $('hooks-said').textContent = error.message;
  }
  button.disabled = false;
  await refreshHooks();
}

// The hooks a person may pause: every hook not paused now, keeping the one chosen.
function pauseChoices(hooks) {
  const select = $('pause-hook');
  const chosen = select.value;
  const names = hooks.filter((h) => !h.paused).map((h) => String(h.hook));
  if (JSON.stringify(names) === select.dataset.names) return;
  select.dataset.names = JSON.stringify(names);
  select.replaceChildren(...names.map((name) => el('option', { value: name }, name)));
  if (names.includes(chosen)) select.value = chosen;
}

async function refreshHooks() {
  try {
    const { hooks } = await api('api/hooks');
    const shown = hooks.flatMap((hook) => {
      const text = line(hook);
      if (text === null) return [];
      const item = el('li', {}, el('span', { class: 'hook-name' }, String(hook.hook)), `: ${text}`);
      if (hook.paused) item.append(' ', resumeButton(String(hook.hook)));
      return [item];
    });
    const idle = hooks.length - shown.length;
    if (idle > 0) {
      const others = shown.length === 0
        ? `${idle === 1 ? 'The one hook' : `All ${idle} hooks`}`
        : `${idle} other hook${idle === 1 ? '' : 's'}`;
      shown.push(el('li', { class: 'hint' }, `${others} idle, no control set`));
    }
    $('hooks-list').replaceChildren(...shown);
    pauseChoices(hooks);
    const running = hooks.reduce((n, h) => n + h.running, 0);
    const queued = hooks.reduce((n, h) => n + h.queued, 0);
    $('hooks-summary').textContent = `${running} running, ${queued} queued`;
  } catch (error) {
    $('hooks-summary').textContent = `not updating: ${error.message}`;
  }
}

/** Shows the hooks now, and again every few seconds while the tab is visible, until the list leaves the page (logged out). */
export function startHooks() {
  $('pause-form').addEventListener('submit', (event) => {
    event.preventDefault();
    if ($('pause-hook').value) change($('pause-hook').value, true, $('pause-button'));
  });
  refreshHooks();
  const timer = setInterval(() => {
    if (!$('hooks-list')) clearInterval(timer);
    else if (!document.hidden) refreshHooks();
  }, POLL_MS);
}
