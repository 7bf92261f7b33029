// Whether a name the request chose may be read unwrapped: a run's name starts the main session's
// line about the run (`Hook <name>: <reply>`), which the main agent reads at its next heartbeat.
// Only a short, plain label stands there; any other name follows the line wrapped as untrusted
// content (lib/runtime/context.ts).
import { detectInjection, neutralise } from './wrap.ts';

// At most 64 letters, digits and the punctuation of ordinary labels ("CI deploy-web",
// "PR #42 (main)", "Alerts: nas/9100"), so on one line; no quotes, brackets or markup characters.
const _PLAIN = /^[A-Za-z0-9 .,:_#()\/-]{1,64}$/;

/**
 * Whether `name`, as the request gave it, is a plain label: at most 64 characters from
 * `[A-Za-z0-9 .,:_#()/-]` (so one line), no injection phrasing and no marker look-alike.
 */
export function plainLabel(name: string): boolean {
  return _PLAIN.test(name) && detectInjection(name).length === 0 && neutralise(name) === name;
}
