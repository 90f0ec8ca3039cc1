import { Clock, systemClock } from '@baton/time';

/**
 * `read` at most once per `ms`: callers within that time share the last answer (or the read under
 * way). For gauges read from the database at scrape time, which every Prometheus asks for often.
 */
export function cachedFor<T>(
  ms: number,
  read: () => Promise<T>,
  clock: Clock = systemClock,
): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | undefined;
  return () => {
    const now = clock.now();
    if (last && now - last.at < ms) return last.value;
    const value = read();
    last = { at: now, value };
    // A failed read is not kept: the next scrape tries again.
    value.catch(() => {
      if (last?.value === value) last = undefined;
    });
    return value;
  };
}
