import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { FAMILIES, Family } from './families';

/** One labelled series of a counter. */
export interface Series {
  labels: Readonly<Record<string, string>>;
  value: number;
}

/** Reads gauges when `/metrics` is scraped (from the database, a queue): the series to show. */
export type GaugeSource = () => Promise<readonly Series[]>;

type Stored = { name: string; labels: Series['labels']; value: number };

/**
 * Every metric of the scheduler in one place, shown by `GET /metrics` through prom-client. Counters
 * and gauges set by the code are kept here, in a map that costs one lookup per `inc`, and handed to
 * prom-client when a scrape asks; histograms are prom-client's own; gauges read from elsewhere
 * (`source`) are read at scrape time. Views of one module (the LogDumper's `/v1/logs/stats`) are
 * read from here, not kept apart. Every name must be a family of `FAMILIES`.
 */
@Injectable()
export class Metrics implements OnModuleDestroy {
  /** By `key`; each series keeps its name and labels for `series()`. */
  private readonly counters = new Map<string, Stored>();
  private readonly gauges = new Set<string>();
  private readonly histograms = new Map<string, Histogram>();
  /** A histogram's series by `key`: observed without prom-client hashing the labels each time. */
  private readonly observers = new Map<string, { observe(value: number): void }>();
  private readonly sources = new Map<string, GaugeSource>();
  readonly registry = new Registry();
  private processMetrics = false;

  /**
   * Every family is shown from the start, before its first series: a scrape of a fresh process
   * names them all (and a family without labels reads 0), so rules and dashboards find them.
   */
  constructor() {
    for (const [name, f] of Object.entries(FAMILIES as Record<string, Family>))
      if (f.kind === 'histogram') this.histogram(name);
      else this.register(name, f);
  }

  inc(name: string, labels: Record<string, string> = {}, by = 1): void {
    const key = Metrics.key(name, labels);
    const c = this.counters.get(key);
    if (c) c.value += by;
    else this.add(key, name, labels, by);
  }

  /** A gauge: the series is set to `value` (a level, e.g. a queue's depth), not added to. */
  set(name: string, labels: Record<string, string>, value: number): void {
    this.gauges.add(name);
    const key = Metrics.key(name, labels);
    const c = this.counters.get(key);
    if (c) c.value = value;
    else this.add(key, name, labels, value);
  }

  /** One observation of a histogram (a duration in seconds, mostly). */
  observe(name: string, labels: Record<string, string>, value: number): void {
    const key = Metrics.key(name, labels);
    const series = this.observers.get(key);
    if (series) return series.observe(value);
    const child = this.histogram(name).labels(labels);
    this.observers.set(key, child);
    child.observe(value);
  }

  /**
   * A gauge whose series are read when `/metrics` is scraped. The source caches what it reads
   * when reading costs (the database): scrapes come every few seconds from every Prometheus.
   */
  source(name: string, read: GaugeSource): void {
    if (this.sources.has(name)) throw new Error(`metric ${name} has a source already`);
    this.sources.set(name, read);
    const f = Metrics.family(name);
    // Shown from the start as a gauge set here: read from the source instead.
    this.registry.removeSingleMetric(name);
    new Gauge({
      name,
      help: f.help,
      labelNames: [...f.labels],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const s of await read()) this.set(s.labels, s.value);
      },
    });
  }

  /** Process metrics (CPU, memory, event loop, handles): on in the application, not in tests. */
  collectProcessMetrics(): void {
    if (this.processMetrics) return;
    this.processMetrics = true;
    collectDefaultMetrics({ register: this.registry });
  }

  /** Names set with `set` (gauges); every other name is a counter. */
  gaugeNames(): ReadonlySet<string> {
    return this.gauges;
  }

  get(name: string, labels: Record<string, string> = {}): number {
    return this.counters.get(Metrics.key(name, labels))?.value ?? 0;
  }

  /** Every series of the counter `name`, with its labels (copies). */
  series(name: string): Series[] {
    const out: Series[] = [];
    for (const c of this.counters.values())
      if (c.name === name) out.push({ labels: { ...c.labels }, value: c.value });
    return out;
  }

  /** Every counter and gauge set here, keyed `name{label="value",...}`, sorted. */
  snapshot(): Record<string, number> {
    return Object.fromEntries(
      [...this.counters.values()]
        .map((c) => {
          const labels = Object.entries(c.labels).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
          return [labels.length ? `${c.name}{${labels.join(',')}}` : c.name, c.value] as const;
        })
        .sort(([a], [b]) => a.localeCompare(b)),
    );
  }

  /** Everything, in the Prometheus text format. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  onModuleDestroy(): void {
    this.registry.clear();
  }

  /** A new series of a family set here (a counter or a gauge). */
  private add(key: string, name: string, labels: Record<string, string>, value: number): void {
    const f = Metrics.family(name);
    // In the family's order: the text format shows labels in the order a series has them.
    const ordered = Object.fromEntries(
      f.labels.filter((l) => l in labels).map((l) => [l, labels[l]]),
    );
    this.counters.set(key, { name, labels: Object.freeze({ ...ordered, ...labels }), value });
  }

  private histogram(name: string): Histogram {
    let h = this.histograms.get(name);
    if (!h) {
      const f = Metrics.family(name);
      h = new Histogram({
        name,
        help: f.help,
        labelNames: [...f.labels],
        buckets: [...(f.buckets ?? [])],
        registers: [this.registry],
      });
      this.histograms.set(name, h);
    }
    return h;
  }

  /** A family set here, handed to prom-client: its series are read from `counters` at scrape time. */
  private register(name: string, f: Family): void {
    const store = this.counters;
    const config = { name, help: f.help, labelNames: [...f.labels], registers: [this.registry] };
    if (f.kind === 'counter')
      new Counter({
        ...config,
        collect() {
          this.reset();
          for (const c of store.values()) if (c.name === name) this.inc(c.labels, c.value);
        },
      });
    else
      new Gauge({
        ...config,
        collect() {
          this.reset();
          for (const c of store.values()) if (c.name === name) this.set(c.labels, c.value);
        },
      });
  }

  private static family(name: string): Family {
    const f = (FAMILIES as Record<string, Family>)[name];
    if (!f) throw new Error(`metric ${name} is not a family of metrics/families.ts`);
    return f;
  }

  /** A series' key: the name, then its label values in the family's order (one per label). */
  private static key(name: string, labels: Record<string, string>): string {
    let key = name;
    for (const l of Metrics.family(name).labels) key += `\u0001${labels[l] ?? ''}`;
    return key;
  }
}
