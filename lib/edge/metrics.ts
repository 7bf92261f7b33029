// A tiny Prometheus registry: counters, gauges and fixed-bucket histograms, rendered in the text
// exposition format 0.0.4.

/** The Content-Type of `Metrics.render()`'s output. */
export const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** One series' label values, by label name. */
export type Labels = Readonly<Record<string, string>>;

/** What a callback gauge reports: one value, or one value per label set. */
export type Collect = () => number | Iterable<readonly [Labels, number]>;

/** Bucket bounds for request and run durations, in seconds. */
export const DURATION_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

interface _Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram';
  lines(): string[];
}

/** A registry of metric families, rendered in the order they were created. */
export class Metrics {
  #families = new Map<string, _Family>();

  /** A counter: a value that only goes up (requests, bytes, failures). */
  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.#add(new Counter(name, help, labelNames));
  }

  /** A gauge set by the caller, or read from `collect` at each render when one is given. */
  gauge(name: string, help: string, labelNames: readonly string[] = [], collect?: Collect): Gauge {
    return this.#add(new Gauge(name, help, labelNames, collect));
  }

  /** A histogram with the given upper bounds; `+Inf` is added. */
  histogram(name: string, help: string, buckets: readonly number[] = DURATION_BUCKETS, labelNames: readonly string[] = []): Histogram {
    return this.#add(new Histogram(name, help, buckets, labelNames));
  }

  /** Every family in the text exposition format, ending in a newline. */
  render(): string {
    const out: string[] = [];
    for (const family of this.#families.values()) {
      out.push(`# HELP ${family.name} ${_escapeHelp(family.help)}`, `# TYPE ${family.name} ${family.type}`, ...family.lines());
    }
    return out.length === 0 ? '' : `${out.join('\n')}\n`;
  }

  #add<T extends _Family>(family: T): T {
    // A histogram also owns NAME_bucket, NAME_sum and NAME_count, so those names clash too.
    const taken = [...this.#families.values()].find((other) => _owned(other).some((name) => _owned(family).includes(name)));
    if (taken !== undefined) throw new TypeError(`Cannot register metric ${family.name}: the name clashes with ${taken.name}`);
    this.#families.set(family.name, family);
    return family;
  }
}

/** A family of series that only go up. */
export class Counter implements _Family {
  readonly type = 'counter';
  readonly name: string;
  readonly help: string;
  #series: _Series<number>;

  constructor(name: string, help: string, labelNames: readonly string[]) {
    this.name = _checkName(name);
    this.help = help;
    this.#series = new _Series(name, labelNames, () => 0);
  }

  /** Adds `by` (default 1) to the series with these labels. */
  inc(labels?: Labels | number, by?: number): void {
    const [set, value = 1] = _args(labels, by);
    if (!Number.isFinite(value) || value < 0) throw new RangeError(`Cannot increase counter ${this.name}: ${value} is not a finite non-negative number`);
    this.#series.update(set, (old) => old + value);
  }

  /** The current value of the series with these labels (0 when never increased). */
  get(labels: Labels = {}): number {
    return this.#series.get(labels) ?? 0;
  }

  /** This family's sample lines, without its HELP and TYPE lines. */
  lines(): string[] {
    return this.#series.lines((text, value) => [`${this.name}${text} ${_number(value)}`]);
  }
}

/** A family of series that go up and down. */
export class Gauge implements _Family {
  readonly type = 'gauge';
  readonly name: string;
  readonly help: string;
  #series: _Series<number>;
  #collect: Collect | undefined;

  constructor(name: string, help: string, labelNames: readonly string[], collect?: Collect) {
    this.name = _checkName(name);
    this.help = help;
    this.#series = new _Series(name, labelNames, () => 0);
    this.#collect = collect;
  }

  /** Sets the series with these labels to `value`. */
  set(labels: Labels | number, value?: number): void {
    const [set, next] = _args(labels, value);
    if (next === undefined) throw new TypeError(`Cannot set gauge ${this.name}: no value given`);
    this.#write(set, () => next);
  }

  /** Adds `by` (default 1) to the series with these labels. */
  inc(labels?: Labels | number, by?: number): void {
    const [set, value = 1] = _args(labels, by);
    this.#write(set, (old) => old + value);
  }

  /** Subtracts `by` (default 1) from the series with these labels. */
  dec(labels?: Labels | number, by?: number): void {
    const [set, value = 1] = _args(labels, by);
    this.#write(set, (old) => old - value);
  }

  /** The current value of the series with these labels (0 when never set). */
  get(labels: Labels = {}): number {
    return this.#series.get(labels) ?? 0;
  }

  /** This family's sample lines (calling the callback, if any), without its HELP and TYPE lines. */
  lines(): string[] {
    if (this.#collect !== undefined) {
      const collected = this.#collect();
      // A fresh table each render: a label set the callback no longer reports disappears.
      this.#series.clear();
      if (typeof collected === 'number') this.#series.update({}, () => collected);
      else for (const [labels, value] of collected) this.#series.update(labels, () => value);
    }
    return this.#series.lines((text, value) => [`${this.name}${text} ${_number(value)}`]);
  }

  #write(labels: Labels, change: (old: number) => number): void {
    if (this.#collect !== undefined) throw new TypeError(`Cannot change gauge ${this.name}: its value comes from a callback`);
    this.#series.update(labels, change);
  }
}

interface _Buckets {
  counts: number[];
  sum: number;
  count: number;
}

/** A family of distributions over fixed buckets. */
export class Histogram implements _Family {
  readonly type = 'histogram';
  readonly name: string;
  readonly help: string;
  readonly buckets: readonly number[];
  #series: _Series<_Buckets>;

  constructor(name: string, help: string, buckets: readonly number[], labelNames: readonly string[]) {
    this.name = _checkName(name);
    this.help = help;
    if (labelNames.includes('le')) throw new TypeError(`Cannot create histogram ${name}: the label le is reserved for buckets`);
    const bounds = buckets.at(-1) === Infinity ? buckets.slice(0, -1) : [...buckets];
    if (bounds.length === 0) throw new RangeError(`Cannot create histogram ${name}: it needs at least one finite bucket`);
    bounds.forEach((bound, i) => {
      if (!Number.isFinite(bound) || (i > 0 && bound <= bounds[i - 1]!)) {
        throw new RangeError(`Cannot create histogram ${name}: buckets must be finite and increasing, got ${buckets.join(', ')}`);
      }
    });
    this.buckets = bounds;
    this.#series = new _Series(name, labelNames, () => ({ counts: bounds.map(() => 0), sum: 0, count: 0 }));
  }

  /** Records one observation in the series with these labels. */
  observe(labels: Labels | number, value?: number): void {
    const [set, observed] = _args(labels, value);
    if (observed === undefined || Number.isNaN(observed)) throw new RangeError(`Cannot observe ${this.name}: the value is not a number`);
    this.#series.update(set, (state) => {
      // Stored per bucket; render makes them cumulative.
      const at = this.buckets.findIndex((bound) => observed <= bound);
      if (at !== -1) state.counts[at]! += 1;
      state.sum += observed;
      state.count += 1;
      return state;
    });
  }

  /** This family's sample lines (cumulative buckets, sum, count), without its HELP and TYPE lines. */
  lines(): string[] {
    return this.#series.lines((text, state, pairs) => {
      let running = 0;
      const lines = this.buckets.map((bound, i) => {
        running += state.counts[i]!;
        return `${this.name}_bucket${_labelText([...pairs, ['le', _number(bound)]])} ${running}`;
      });
      lines.push(`${this.name}_bucket${_labelText([...pairs, ['le', '+Inf']])} ${state.count}`);
      lines.push(`${this.name}_sum${text} ${_number(state.sum)}`, `${this.name}_count${text} ${state.count}`);
      return lines;
    });
  }
}

// The series of one family, keyed by their label values in the declared label order.
class _Series<T> {
  #name: string;
  #labelNames: readonly string[];
  #initial: () => T;
  #values = new Map<string, { pairs: [string, string][]; value: T }>();

  constructor(name: string, labelNames: readonly string[], initial: () => T) {
    for (const label of labelNames) {
      if (!LABEL_NAME.test(label) || label.startsWith('__')) throw new TypeError(`Cannot create metric ${name}: invalid label name ${JSON.stringify(label)}`);
    }
    if (new Set(labelNames).size !== labelNames.length) throw new TypeError(`Cannot create metric ${name}: a label name is repeated`);
    this.#name = name;
    this.#labelNames = labelNames;
    this.#initial = initial;
    // A family without labels has exactly one series, shown (as zero) from the start.
    if (labelNames.length === 0) this.update({}, (value) => value);
  }

  get(labels: Labels): T | undefined {
    return this.#values.get(this.#key(labels))?.value;
  }

  update(labels: Labels, change: (old: T) => T): void {
    const key = this.#key(labels);
    const entry = this.#values.get(key);
    if (entry !== undefined) entry.value = change(entry.value);
    else this.#values.set(key, { pairs: this.#labelNames.map((label) => [label, labels[label]!]), value: change(this.#initial()) });
  }

  clear(): void {
    this.#values.clear();
  }

  lines(format: (labelText: string, value: T, pairs: [string, string][]) => string[]): string[] {
    return [...this.#values.values()].flatMap(({ pairs, value }) => format(_labelText(pairs), value, pairs));
  }

  // Counted on every request: built in one pass, with no intermediate arrays or closures.
  #key(labels: Labels): string {
    const names = this.#labelNames;
    let key = '[';
    for (let i = 0; i < names.length; i++) {
      const value = labels[names[i]!];
      if (typeof value !== 'string') return this.#refuse(labels);
      key += i === 0 ? JSON.stringify(value) : `,${JSON.stringify(value)}`;
    }
    // Every declared label is there; one more would make the count differ.
    if (Object.keys(labels).length !== names.length) return this.#refuse(labels);
    return `${key}]`;
  }

  #refuse(labels: Labels): never {
    throw new TypeError(`Cannot record ${this.#name}: expected labels {${this.#labelNames.join(', ')}}, got {${Object.keys(labels).join(', ')}}`);
  }
}

function _owned(family: _Family): string[] {
  return family.type === 'histogram' ? [family.name, `${family.name}_bucket`, `${family.name}_sum`, `${family.name}_count`] : [family.name];
}

function _checkName(name: string): string {
  if (!METRIC_NAME.test(name)) throw new TypeError(`Cannot create metric: invalid name ${JSON.stringify(name)}`);
  return name;
}

// `inc()`, `inc(5)`, `inc({ hook: 'wake' })` and `inc({ hook: 'wake' }, 5)` all read the same way.
function _args(labels: Labels | number | undefined, value: number | undefined): [Labels, number | undefined] {
  return typeof labels === 'number' ? [{}, labels] : [labels ?? {}, value];
}

function _labelText(pairs: readonly (readonly [string, string])[]): string {
  return pairs.length === 0 ? '' : `{${pairs.map(([name, value]) => `${name}="${_escapeLabel(value)}"`).join(',')}}`;
}

function _escapeLabel(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

// HELP text escapes backslash and newline only; a quote stands as it is.
function _escapeHelp(text: string): string {
  return text.replace(/[\\\n]/g, (c) => (c === '\n' ? '\\n' : '\\\\'));
}

function _number(value: number): string {
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return Number.isNaN(value) ? 'NaN' : String(value);
}
