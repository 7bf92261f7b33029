import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Metrics } from '../lib/edge/metrics.ts';
import { parseExposition, valueOf } from './_exposition.ts';

test('Metrics.counter() counts per label set and renders HELP, TYPE and one sample per series', () => {
  const m = new Metrics();
  const requests = m.counter('hooks_requests_total', 'Requests by hook and status.', ['hook', 'status']);
  requests.inc({ hook: 'wake', status: '200' });
  requests.inc({ hook: 'wake', status: '200' });
  requests.inc({ status: '401', hook: 'agent' }, 3);
  const parsed = parseExposition(m.render());
  assert.equal(parsed.help.get('hooks_requests_total'), 'Requests by hook and status.');
  assert.equal(parsed.types.get('hooks_requests_total'), 'counter');
  assert.deepEqual(parsed.samples, [
    { name: 'hooks_requests_total', labels: { hook: 'wake', status: '200' }, value: 2 },
    { name: 'hooks_requests_total', labels: { hook: 'agent', status: '401' }, value: 3 },
  ]);
  assert.equal(requests.get({ hook: 'wake', status: '200' }), 2);
  assert.equal(requests.get({ hook: 'wake', status: '500' }), 0);
});

test('Metrics.render() lists families in creation order, HELP and TYPE before their samples', () => {
  const m = new Metrics();
  m.counter('b_total', 'B.').inc();
  m.gauge('a', 'A.', [], () => 1);
  assert.equal(m.render(), '# HELP b_total B.\n# TYPE b_total counter\nb_total 1\n# HELP a A.\n# TYPE a gauge\na 1\n');
});

test('Metrics.render() of an empty registry is empty', () => {
  assert.equal(new Metrics().render(), '');
});

test('counter without labels shows 0 before its first increment; inc(n) adds n', () => {
  const m = new Metrics();
  const bytes = m.counter('hooks_body_bytes_total', 'Body bytes read.');
  assert.equal(valueOf(parseExposition(m.render()), 'hooks_body_bytes_total'), 0);
  bytes.inc(512);
  bytes.inc();
  bytes.inc({}, 0.5);
  assert.equal(valueOf(parseExposition(m.render()), 'hooks_body_bytes_total'), 513.5);
});

test('a labelled family shows no sample until a series is recorded', () => {
  const m = new Metrics();
  m.counter('x_total', 'X.', ['hook']);
  assert.equal(m.render(), '# HELP x_total X.\n# TYPE x_total counter\n');
});

test('label values escape backslash, double quote and newline', () => {
  const m = new Metrics();
  const odd = 'a\\b"c\nd';
  m.counter('odd_total', 'Odd.', ['v']).inc({ v: odd });
  const text = m.render();
  assert.ok(text.includes('odd_total{v="a\\\\b\\"c\\nd"} 1\n'), text);
  assert.deepEqual(parseExposition(text).samples[0]!.labels, { v: odd });
});

test('HELP text escapes backslash and newline and leaves quotes alone', () => {
  const m = new Metrics();
  m.gauge('g', 'Says "hi"\\now\nand then.', [], () => 0);
  const text = m.render();
  assert.ok(text.startsWith('# HELP g Says "hi"\\\\now\\nand then.\n'), text);
  assert.equal(parseExposition(text).help.get('g'), 'Says "hi"\\now\nand then.');
});

test("gauge values +Inf, -Inf and NaN render in the format's spelling", () => {
  const m = new Metrics();
  m.gauge('g', 'G.', ['k'], () => [
    [{ k: 'a' }, Infinity],
    [{ k: 'b' }, -Infinity],
    [{ k: 'c' }, Number.NaN],
  ]);
  assert.match(m.render(), /g\{k="a"\} \+Inf\ng\{k="b"\} -Inf\ng\{k="c"\} NaN\n$/);
});

test('gauge() with a callback reads its value at each render', () => {
  const m = new Metrics();
  let size = 3;
  let calls = 0;
  m.gauge('limiter_table_size', 'Clients tracked.', [], () => {
    calls += 1;
    return size;
  });
  assert.equal(calls, 0);
  assert.equal(valueOf(parseExposition(m.render()), 'limiter_table_size'), 3);
  size = 7;
  assert.equal(valueOf(parseExposition(m.render()), 'limiter_table_size'), 7);
  assert.equal(calls, 2);
});

test('gauge() with a labelled callback shows exactly the label sets it reports now', () => {
  const m = new Metrics();
  let states: [Record<string, string>, number][] = [
    [{ state: 'queued' }, 2],
    [{ state: 'running' }, 1],
  ];
  m.gauge('runs', 'Runs by state.', ['state'], () => states);
  assert.deepEqual(parseExposition(m.render()).samples.map((s) => [s.labels['state'], s.value]), [['queued', 2], [
    'running',
    1,
  ]]);
  states = [[{ state: 'running' }, 4]];
  assert.deepEqual(parseExposition(m.render()).samples.map((s) => [s.labels['state'], s.value]), [['running', 4]]);
});

test('counter.inc() rejects negative and non-finite amounts', () => {
  const c = new Metrics().counter('c_total', 'C.');
  assert.throws(() => c.inc(-1), {
    name: 'RangeError',
    message: 'Cannot increase counter c_total: -1 is not a finite non-negative number',
  });
  assert.throws(() => c.inc(Infinity), RangeError);
  assert.throws(() => c.inc(Number.NaN), RangeError);
});

test('recording with missing or unknown labels is a TypeError', () => {
  const c = new Metrics().counter('c_total', 'C.', ['hook', 'status']);
  assert.throws(() => c.inc({ hook: 'wake' }), {
    name: 'TypeError',
    message: 'Cannot record c_total: expected labels {hook, status}, got {hook}',
  });
  assert.throws(() => c.inc({ hook: 'wake', status: '200', extra: 'x' }), TypeError);
});

test('Metrics rejects invalid metric and label names', () => {
  const m = new Metrics();
  assert.throws(() => m.counter('9lives', 'X.'), {
    name: 'TypeError',
    message: 'Cannot create metric: invalid name "9lives"',
  });
  assert.throws(() => m.counter('a-b', 'X.'), TypeError);
  assert.throws(() => m.counter('ok_total', 'X.', ['bad-label']), {
    name: 'TypeError',
    message: 'Cannot create metric ok_total: invalid label name "bad-label"',
  });
  assert.throws(() => m.counter('ok_total', 'X.', ['__reserved']), TypeError);
  assert.throws(() => m.counter('ok_total', 'X.', ['a', 'a']), {
    name: 'TypeError',
    message: 'Cannot create metric ok_total: a label name is repeated',
  });
});

test('Metrics rejects a name already taken', () => {
  const m = new Metrics();
  m.counter('x_total', 'X.');
  assert.throws(() => m.gauge('x_total', 'Again.', [], () => 1), {
    name: 'TypeError',
    message: 'Cannot register metric x_total: the name clashes with x_total',
  });
});
