// A tiny Prometheus registry: counters, and gauges read from a callback, rendered in the text
// exposition format 0.0.4.

/** The Content-Type of `Metrics.render()`'s output. */
export const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** One series' label values, by label name. */
export type Labels = Readonly<Record<string, string>>;

/** What a callback gauge reports: one value, or one value per label set. */
export type Collect = () => number | Iterable<readonly [Labels, number]>;

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

interface _Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge';
  lines(): string[];
}

/** A registry of metric families, rendered in the order they were created. */
export class Metrics {
  #families = new Map<string, _Family>();

  /** A counter: a value that only goes up (requests, bytes, failures). */
  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.#add(new Counter(name, help, labelNames));
  }

  /** A gauge whose value is read from `collect` at each render (what it reports is kept elsewhere). */
  gauge(name: string, help: string, labelNames: readonly string[], collect: Collect): Gauge {
    return this.#add(new Gauge(name, help, labelNames, collect));
  }

  /** Every family in the text exposition format, ending in a newline. */
  render(): string {
    const out: string[] = [];
    for (const family of this.#families.values()) {
      out.push(
        `# HELP ${family.name} ${_escapeHelp(family.help)}`,
        `# TYPE ${family.name} ${family.type}`,
        ...family.lines(),
      );
    }
    return out.length === 0 ? '' : `${out.join('\n')}\n`;
  }

  #add<T extends _Family>(family: T): T {
    const taken = this.#families.get(family.name);
    if (taken !== undefined) {
      throw new TypeError(`Cannot register metric ${family.name}: the name clashes with ${taken.name}`);
    }
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
    if (!Number.isFinite(value) || value < 0) {
      throw new RangeError(`Cannot increase counter ${this.name}: ${value} is not a finite non-negative number`);
    }
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

/** A family of series read from a callback at each render. */
export class Gauge implements _Family {
  readonly type = 'gauge';
  readonly name: string;
  readonly help: string;
  #series: _Series<number>;
  #collect: Collect;

  constructor(name: string, help: string, labelNames: readonly string[], collect: Collect) {
    this.name = _checkName(name);
    this.help = help;
    this.#series = new _Series(name, labelNames, () => 0);
    this.#collect = collect;
  }

  /** This family's sample lines (calling the callback), without its HELP and TYPE lines. */
  lines(): string[] {
    const collected = this.#collect();
    // A fresh table each render: a label set the callback no longer reports disappears.
    this.#series.clear();
    if (typeof collected === 'number') this.#series.update({}, () => collected);
    else for (const [labels, value] of collected) this.#series.update(labels, () => value);
    return this.#series.lines((text, value) => [`${this.name}${text} ${_number(value)}`]);
  }
}

class _Series<T> {
  #name: string;
  #labelNames: readonly string[];
  #initial: () => T;
  #values = new Map<string, { pairs: [string, string][]; value: T }>();

  constructor(name: string, labelNames: readonly string[], initial: () => T) {
    for (const label of labelNames) {
      if (!LABEL_NAME.test(label) || label.startsWith('__')) {
        throw new TypeError(`Cannot create metric ${name}: invalid label name ${JSON.stringify(label)}`);
      }
    }
    if (new Set(labelNames).size !== labelNames.length) {
      throw new TypeError(`Cannot create metric ${name}: a label name is repeated`);
    }
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
    else {this.#values.set(key, {
        pairs: this.#labelNames.map((label) => [label, labels[label]!]),
        value: change(this.#initial()),
      });}
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
    throw new TypeError(
      `Cannot record ${this.#name}: expected labels {${this.#labelNames.join(', ')}}, got {${
        Object.keys(labels).join(', ')
      }}`,
    );
  }
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
