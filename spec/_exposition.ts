// Test helper: a strict reader of Prometheus' text exposition format 0.0.4, written from the format's description.
import assert from 'node:assert/strict';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  /** TYPE by family name. */
  types: Map<string, string>;
  help: Map<string, string>;
  samples: Sample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$/;
const LABEL = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,(?!$)|$)/;

/**
 * Parses the text format 0.0.4 strictly: every line is a HELP, a TYPE or a sample; a family's
 * HELP and TYPE come before its samples, its samples are contiguous, and the text ends in a newline.
 */
export function parseExposition(text: string): Exposition {
  assert.ok(text === '' || text.endsWith('\n'), 'the exposition ends with a newline');
  const out: Exposition = { types: new Map(), help: new Map(), samples: [] };
  let family: string | null = null;
  const closed = new Set<string>();
  for (const line of text === '' ? [] : text.slice(0, -1).split('\n')) {
    const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (meta !== null) {
      const [, kind, name, rest] = meta as unknown as [string, 'HELP' | 'TYPE', string, string];
      if (family !== null && family !== name) closed.add(family);
      assert.ok(!closed.has(name), `family ${name} is not split: ${line}`);
      family = name;
      if (kind === 'HELP') out.help.set(name, rest.replace(/\\(\\|n)/g, (_, c: string) => (c === 'n' ? '\n' : '\\')));
      else {
        assert.match(rest, /^(counter|gauge|histogram|summary|untyped)$/, line);
        out.types.set(name, rest);
      }
      continue;
    }
    const sample = SAMPLE.exec(line);
    assert.ok(sample !== null, `a sample line: ${JSON.stringify(line)}`);
    const [, name, labelText = '', valueText] = sample as unknown as [string, string, string | undefined, string];
    const owner = out.types.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
    assert.ok(out.types.has(owner), `sample ${name} follows its family's TYPE line`);
    assert.equal(owner, family, `sample ${name} sits with its family`);
    const value = valueText === '+Inf' ? Infinity : valueText === '-Inf' ? -Infinity : Number(valueText);
    assert.ok(valueText === 'NaN' || !Number.isNaN(value), `a number: ${line}`);
    out.samples.push({ name, labels: _labels(labelText), value });
  }
  return out;
}

function _labels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  if (text === '') return labels;
  let rest = text.slice(1, -1);
  while (rest !== '') {
    const match = LABEL.exec(rest);
    assert.ok(match !== null, `a label pair: ${rest}`);
    const [whole, name, raw] = match as unknown as [string, string, string];
    assert.ok(!(name in labels), `label ${name} appears once`);
    labels[name] = raw.replace(/\\([\\"n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
    rest = rest.slice(whole.length);
  }
  return labels;
}

/** The value of the one sample with exactly these labels, or undefined when there is none. */
export function valueOf(page: Exposition, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = page.samples.filter((s) => s.name === name && _sameLabels(s.labels, labels));
  assert.ok(found.length <= 1, `at most one ${name} sample per label set`);
  return found[0]?.value;
}

function _sameLabels(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}
