// A counter and a histogram whose updates are a few number updates, for the series every request
// touches. prom-client's children check and hash their labels again on every update; these keep each
// label set's figures in an object of their own and hand them to the registry, in prom-client's own
// format (a histogram's cumulative buckets with `le`, then `_sum` and `_count`), only at a scrape.
import type { Registry } from 'prom-client';

type Metric = Parameters<Registry['registerMetric']>[0];

/** The label object of `values` (in `names` order). */
function labelsOf(names: readonly string[], values: readonly string[]): Record<string, string> {
  return Object.fromEntries(names.map((name, i) => [name, values[i] ?? '']));
}

/** One label set's count. */
export class CounterSeries {
  value = 0;

  constructor(readonly labels: Readonly<Record<string, string>>) {}

  inc(): void {
    this.value++;
  }
}

/** What both kinds keep: their series by label values, registered on the registry under their name. */
abstract class FastMetric<S extends { readonly labels: Readonly<Record<string, string>> }> {
  readonly aggregator = 'sum';
  readonly #series = new Map<string, S>();

  constructor(
    readonly type: 'counter' | 'histogram',
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series of these label values (in labelNames order), made on first use. */
  series(...values: string[]): S {
    const key = values.join('\0');
    let series = this.#series.get(key);
    if (!series) this.#series.set(key, (series = this.make(labelsOf(this.labelNames, values))));
    return series;
  }

  /** What the registry reads at a scrape. */
  get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: unknown[] }> {
    const { name, help, type, aggregator } = this;
    return Promise.resolve({ name, help, type, aggregator, values: this.exported([...this.#series.values()]) });
  }

  reset(): void {
    this.#series.clear();
  }

  protected abstract make(labels: Readonly<Record<string, string>>): S;
  protected abstract exported(series: readonly S[]): unknown[];
}

export class FastCounter extends FastMetric<CounterSeries> {
  constructor(name: string, help: string, labelNames: readonly string[], registry: Registry) {
    super('counter', name, help, labelNames, registry);
  }

  protected make(labels: Readonly<Record<string, string>>): CounterSeries {
    return new CounterSeries(labels);
  }

  protected exported(series: readonly CounterSeries[]): CounterSeries[] {
    return [...series];
  }
}

/** One label set's counts: per bucket (not cumulative), then the +Inf overflow. */
export class HistogramSeries {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const { bounds } = this;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

interface ExportedValue {
  labels: Record<string, string | number>;
  sharedLabels: Readonly<Record<string, string>>;
  value: number;
  metricName: string;
}

export class FastHistogram extends FastMetric<HistogramSeries> {
  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    super('histogram', name, help, labelNames, registry);
  }

  protected make(labels: Readonly<Record<string, string>>): HistogramSeries {
    return new HistogramSeries(labels, this.bounds);
  }

  protected exported(series: readonly HistogramSeries[]): ExportedValue[] {
    const values: ExportedValue[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of series) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += s.counts[i]!;
        values.push({ labels: { le }, sharedLabels: s.labels, value: cumulative, metricName: bucket });
      });
      values.push({ labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: bucket });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return values;
  }
}
