import { Injectable } from '@nestjs/common';

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
 * The LogDumper's counters, kept in one place so a metrics exporter can read them later. They
 * count since this process started; each instance counts what it processed itself.
 */
@Injectable()
export class LogDumperCounters {
  private readonly bySource = new Map<string, SourceCounts>();

  add(sourceId: string, name: CounterName, n = 1): void {
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
