// The page's list of hooks: each hook's runs executing and queued and the controls it sets (the
// data status shows), polled from api/hooks. Text nodes only, as everywhere on the page (dom.js).
import { $, api, el } from './dom.js';

const POLL_MS = 5000;

// What one hook is doing and what it sets, or null when it is idle with nothing set.
function line(hook) {
  const doing = [];
  if (hook.running > 0) doing.push(`${hook.running} running`);
  if (hook.queued > 0) doing.push(`${hook.queued} queued`);
  if (hook.coalescing > 0) doing.push(`${hook.coalescing} coalescing window${hook.coalescing === 1 ? '' : 's'} open`);
  const sets = [];
  if (hook.concurrency !== null && hook.concurrency !== undefined) sets.push(`concurrency ${hook.concurrency}`);
  if (hook.maxQueued !== null && hook.maxQueued !== undefined) sets.push(`maxQueued ${hook.maxQueued}`);
  if (hook.coalesce) {
    sets.push(`coalesce ${hook.coalesce.windowSeconds}s quiet, at most ${hook.coalesce.maxWaitSeconds}s`);
  }
  if (doing.length === 0 && sets.length === 0) return null;
  return `${doing.length === 0 ? 'idle' : doing.join(', ')}${sets.length === 0 ? '' : ` (${sets.join(', ')})`}`;
}

async function refreshHooks() {
  try {
    const { hooks } = await api('api/hooks');
    const shown = hooks.flatMap((hook) => {
      const text = line(hook);
      return text === null ? [] : [el('li', {}, el('span', { class: 'hook-name' }, String(hook.hook)), `: ${text}`)];
    });
    const idle = hooks.length - shown.length;
    if (idle > 0) {
      const others = shown.length === 0
        ? `${idle === 1 ? 'The one hook' : `All ${idle} hooks`}`
        : `${idle} other hook${idle === 1 ? '' : 's'}`;
      shown.push(el('li', { class: 'hint' }, `${others} idle, no control set`));
    }
    $('hooks-list').replaceChildren(...shown);
    const running = hooks.reduce((n, h) => n + h.running, 0);
    const queued = hooks.reduce((n, h) => n + h.queued, 0);
    $('hooks-summary').textContent = `${running} running, ${queued} queued`;
  } catch (error) {
    $('hooks-summary').textContent = `not updating: ${error.message}`;
  }
}

/** Shows the hooks now, and again every few seconds while the tab is visible, until the list leaves the page (logged out). */
export function startHooks() {
  refreshHooks();
  const timer = setInterval(() => {
    if (!$('hooks-list')) clearInterval(timer);
    else if (!document.hidden) refreshHooks();
  }, POLL_MS);
}
