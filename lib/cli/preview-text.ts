// How `try` and `requests replay --dry-run` show what a request would become.

import type { Preview } from '../edge/preview.ts';
import { clipLine, escapeControls } from '../text.ts';
import { describeCause } from '../model/cause.ts';

/** A dry run's result as a person reads it, its control characters escaped (the request's, the transforms', and the server's that answered). */
export function formatPreview(p: Preview): string {
  const lines: string[] = [];
  const row = (key: string, value: string) => lines.push(`${key.padEnd(11)} ${escapeControls(value, false)}`);
  row('hook', p.hook);
  if (p.signature !== undefined) {
    const s = p.signature;
    row(
      'signature',
      s.ok
        ? `${s.scheme}: ok`
        : `${s.scheme}: refused, ${s.why ?? 'invalid'}${s.reason === undefined ? '' : `: ${s.reason}`}`,
    );
  }
  if (p.filter === 'unmatched') row('mapping', 'none matches this hook');
  else if (p.filter === 'ignored') {
    row(
      'mapping',
      `none: ${
        p.cause?.kind === 'filter' ? describeCause(p.cause) : "the filters of this path's mappings leave it out"
      } (answered 200 ignored)`,
    );
  } else if (p.filter !== undefined) row('mapping', `${p.mapping ?? '-'} (matched)`);
  p.transforms.forEach((t, i) =>
    row(
      `transform${p.transforms.length > 1 ? ` ${i + 1}` : ''}`,
      t.ok
        ? `returned ${clipLine(JSON.stringify(t.value) ?? 'undefined', 200)}`
        : `failed: ${t.error}${t.at === undefined ? '' : ` (at ${t.at})`}`,
    )
  );
  row(
    'would get',
    `${p.status}${p.code === undefined ? '' : ` ${p.code}`}${p.error === undefined ? '' : `: ${p.error}`}`,
  );
  p.actions.forEach((a, i) => lines.push(..._actionLines(a, p.actions.length > 1 ? ` ${i + 1}` : '')));
  for (const warning of p.warnings) lines.push(`warning: ${escapeControls(warning, false)}`);
  // Escaping an escaped text changes nothing; this catches what the rows above did not (a mode, a status).
  return `${escapeControls(lines.join('\n'), true)}\n`;
}

// One action of a dry run: what a run would be (agent, session key, model, channel, name) or where a
// wake goes, its text, and the placeholders that found nothing. `number` tells it from the others.
function _actionLines(a: Preview['actions'][number], number: string): string[] {
  const lines = [`${a.kind === 'wake' ? 'wake' : a.kind === 'notify' ? 'notify' : 'agent run'}${number}:`];
  if (a.notice !== undefined) {
    lines.push(`  channel     ${escapeControls(`${a.notice.channel} to ${a.notice.to ?? '(its defaultTo)'}`, false)}`);
    lines.push(`  name        ${escapeControls(a.notice.name, false)}`);
  } else if (a.run !== undefined) {
    const r = a.run;
    lines.push(`  agent       ${escapeControls(r.agentId, false)}`);
    lines.push(
      `  session key ${escapeControls(r.sessionKey, false)}${r.sessionMode === undefined ? '' : ` (${r.sessionMode})`}`,
    );
    lines.push(`  model       ${escapeControls(r.model ?? "(the agent's default)", false)}`);
    lines.push(
      `  channel     ${
        escapeControls(
          `${r.channel}${r.to === undefined ? '' : ` to ${r.to}`}${
            r.accountId === undefined ? '' : ` from account ${r.accountId}`
          }${r.deliver ? '' : ' (not delivered)'}`,
          false,
        )
      }`,
    );
    lines.push(`  name        ${escapeControls(r.name, false)}`);
  } else if (a.mode !== undefined) {
    lines.push(`  mode        ${a.mode}`);
    if (a.target?.agentId !== undefined) lines.push(`  agent       ${escapeControls(a.target.agentId, false)}`);
    if (a.target?.sessionKey !== undefined) lines.push(`  session key ${escapeControls(a.target.sessionKey, false)}`);
  }
  lines.push(`  ${a.kind === 'agent' ? 'message' : 'text'}:`);
  lines.push(escapeControls(a.text, true).replace(/^/gm, '    '));
  for (const placeholder of a.unresolved) {
    lines.push(`  warning: {{${escapeControls(placeholder, false)}}} resolved to nothing`);
  }
  return lines;
}
