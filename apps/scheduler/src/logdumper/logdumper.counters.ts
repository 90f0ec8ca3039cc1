import { Injectable } from '@nestjs/common';
import { Metrics } from '../common/metrics';

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

/**
 * The LogDumper's counters per source (its `/v1/logs/stats` view), mirrored into `Metrics`, the
 * one registry a metrics exporter will read. They
 * count since this process started; each instance counts what it processed itself.
 */
@Injectable()
export class LogDumperCounters {
  private readonly bySource = new Map<string, SourceCounts>();

  constructor(private readonly metrics: Metrics) {}

  add(sourceId: string, name: CounterName, n = 1): void {
    // Also in the scheduler-wide registry, next to the Producer's counters.
    this.metrics.inc(`baton_log_records_${name}_total`, { source: sourceId }, n);
    let c = this.bySource.get(sourceId);
    if (!c) this.bySource.set(sourceId, (c = zero()));
    c[name] += n;
  }

  /** A copy: callers cannot change the counts. */
  snapshot(): { sources: Record<string, SourceCounts>; totals: SourceCounts } {
    const totals = zero();
    const sources: Record<string, SourceCounts> = {};
    for (const [id, c] of [...this.bySource.entries()].sort(([a], [b]) => a.localeCompare(b))) {
      sources[id] = { ...c };
      for (const k of Object.keys(totals) as CounterName[]) totals[k] += c[k];
    }
    return { sources, totals };
  }
}
