import { Injectable } from '@nestjs/common';

/**
 * Every counter of the scheduler in one place, named like Prometheus counters
 * (`baton_timer_fires_total{timer="..."}`), so the observability issue only has to expose them.
 */
@Injectable()
export class Metrics {
  private readonly counters = new Map<string, number>();

  inc(name: string, labels: Record<string, string> = {}, by = 1): void {
    const key = Metrics.key(name, labels);
    this.counters.set(key, (this.counters.get(key) ?? 0) + by);
  }

  get(name: string, labels: Record<string, string> = {}): number {
    return this.counters.get(Metrics.key(name, labels)) ?? 0;
  }

  /** Every counter, keyed `name{label="value",...}`, sorted. */
  snapshot(): Record<string, number> {
    return Object.fromEntries([...this.counters.entries()].sort(([a], [b]) => a.localeCompare(b)));
  }

  private static key(name: string, labels: Record<string, string>): string {
    const parts = Object.keys(labels)
      .sort()
      .map((k) => `${k}=${JSON.stringify(labels[k])}`);
    return parts.length ? `${name}{${parts.join(',')}}` : name;
  }
}
