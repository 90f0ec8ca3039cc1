import { Injectable } from '@nestjs/common';
import { Metrics } from '../metrics';

/** What happened to records, per source. */
export interface SourceCounts {
  /** Records read (well-formed or not). */
  ingested: number;
  /** Records that could not be read: bad JSON, missing position, too long, not UTF-8. */
  dropped: number;
  /** Well-formed records no enabled rule matched. */
  unmatched: number;
  /** (record, rule) pairs that matched. */
  matched: number;
  /** Tasks created. */
  created: number;
  /** Matches whose task already existed (a replay). */
  duplicate: number;
  /** Matches whose filled task the create validation refused. */
  rejected: number;
}

export type CounterName = keyof SourceCounts;

const zero = (): SourceCounts => ({
  ingested: 0,
  dropped: 0,
  unmatched: 0,
  matched: 0,
  created: 0,
  duplicate: 0,
  rejected: 0,
});

/** Every count the LogDumper keeps per source. */
export const COUNTER_NAMES = Object.keys(zero()) as CounterName[];

/** The `Metrics` counter that holds one of the LogDumper's counts, labelled by source. */
export const metricName = (name: CounterName): string => `baton_log_records_${name}_total`;

/**
 * The LogDumper's counters per source (its `/v1/logs/stats` view). They live in `Metrics`, the
 * scheduler's one registry, as `baton_log_records_<name>_total{source="..."}`; this is a view of
 * them. They count since this process started; each instance counts what it processed itself.
 */
@Injectable()
export class LogDumperCounters {
  constructor(private readonly metrics: Metrics) {}

  add(sourceId: string, name: CounterName, n = 1): void {
    this.metrics.inc(metricName(name), { source: sourceId }, n);
  }

  /** A copy: callers cannot change the counts. */
  snapshot(): { sources: Record<string, SourceCounts>; totals: SourceCounts } {
    const bySource = new Map<string, SourceCounts>();
    for (const name of COUNTER_NAMES) {
      for (const { labels, value } of this.metrics.series(metricName(name))) {
        const source = labels.source;
        if (source === undefined) continue;
        let c = bySource.get(source);
        if (!c) bySource.set(source, (c = zero()));
        c[name] += value;
      }
    }
    const totals = zero();
    const sources: Record<string, SourceCounts> = {};
    for (const [id, c] of [...bySource.entries()].sort(([a], [b]) => a.localeCompare(b))) {
      sources[id] = c;
      for (const k of COUNTER_NAMES) totals[k] += c[k];
    }
    return { sources, totals };
  }
}
