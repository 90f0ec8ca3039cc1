import { Injectable } from '@nestjs/common';

/** One labelled series of a counter. */
export interface Series {
  labels: Readonly<Record<string, string>>;
  value: number;
}

/**
 * Every counter of the scheduler in one place, named like Prometheus counters
 * (`baton_timer_fires_total{timer="..."}`), so the observability issue only has to expose them.
 * Views of one module (the LogDumper's `/v1/logs/stats`) are read from here, not kept apart.
 */
@Injectable()
export class Metrics {
  /** Keyed `name{label="value",...}`; each series keeps its name and labels for `series()`. */
  private readonly counters = new Map<
    string,
    { name: string; labels: Series['labels']; value: number }
  >();
  private readonly gauges = new Set<string>();

  inc(name: string, labels: Record<string, string> = {}, by = 1): void {
    const key = Metrics.key(name, labels);
    const c = this.counters.get(key);
    if (c) c.value += by;
    else this.counters.set(key, { name, labels: Object.freeze({ ...labels }), value: by });
  }

  /** A gauge: the series is set to `value` (a level, e.g. a queue's depth), not added to. */
  set(name: string, labels: Record<string, string>, value: number): void {
    this.gauges.add(name);
    const key = Metrics.key(name, labels);
    const c = this.counters.get(key);
    if (c) c.value = value;
    else this.counters.set(key, { name, labels: Object.freeze({ ...labels }), value });
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

  /** Every series of every counter, by counter name (copies). */
  all(): Map<string, Series[]> {
    const out = new Map<string, Series[]>();
    for (const c of this.counters.values()) {
      const list = out.get(c.name) ?? [];
      list.push({ labels: { ...c.labels }, value: c.value });
      out.set(c.name, list);
    }
    return out;
  }

  /** Every counter, keyed `name{label="value",...}`, sorted. */
  snapshot(): Record<string, number> {
    return Object.fromEntries(
      [...this.counters.entries()]
        .map(([k, c]) => [k, c.value] as const)
        .sort(([a], [b]) => a.localeCompare(b)),
    );
  }

  private static key(name: string, labels: Record<string, string>): string {
    const parts = Object.keys(labels)
      .sort()
      .map((k) => `${k}=${JSON.stringify(labels[k])}`);
    return parts.length ? `${name}{${parts.join(',')}}` : name;
  }
}
