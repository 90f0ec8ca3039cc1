import { systemClock } from '@baton/time';
/** Counters are per second; two seconds back is all that is read. Idle buckets go after this. */
export const KEEP_MS = 3000;

/**
 * How the fleet's starts are shared between tenants when it is saturated (docs/operations.md).
 * A tenant's fair share is the fleet's starts of the second before divided by the tenants that
 * had work then (at least `minShare` a second). Each tenant has a token bucket filling at its
 * share, holding a tenth of a second's worth: the entries it enqueues with a token take the main
 * lane; the rest take the overflow lane, which the runner serves only with the slots the main
 * lane leaves free. So one tenant's burst of 100,000 tasks waits behind the steady work of the
 * others instead of in front of it, and a tenant alone still has every slot.
 */
export interface FairShare {
  /** Counts `n` entries of `tenant` now; answers how many of them are within its share. */
  admit(tenant: string, n: number): Promise<number>;
  /** The runner started `n` entries (the fleet's throughput, for the next second's share). */
  started(n: number): void;
  close(): Promise<void>;
}

export const second = (now: number): number => Math.floor(now / 1000);

/** The bucket holds this share of a second's worth: a tenant's main-lane entries come spread out. */
export const BURST_OF_SECOND = 0.1;

/** In this process: the embedded queue serves one instance. */
export class MemoryFairShare implements FairShare {
  private readonly active = new Map<number, Set<string>>();
  private readonly starts = new Map<number, number>();
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly minShare: number,
    private readonly now: () => number = () => systemClock.now(),
  ) {}

  async admit(tenant: string, n: number): Promise<number> {
    const now = this.now();
    const s = second(now);
    for (const k of this.active.keys()) if (k < s - 1) this.active.delete(k);
    for (const k of this.starts.keys()) if (k < s - 1) this.starts.delete(k);
    let current = this.active.get(s);
    if (!current) this.active.set(s, (current = new Set()));
    current.add(tenant);
    const tenants = Math.max(1, this.active.get(s - 1)?.size ?? 0);
    const rate = Math.max(this.minShare, (this.starts.get(s - 1) ?? 0) / tenants);
    const burst = Math.max(1, rate * BURST_OF_SECOND);
    const b = this.buckets.get(tenant) ?? { tokens: burst, at: now };
    b.tokens = Math.min(burst, b.tokens + ((now - b.at) / 1000) * rate);
    b.at = now;
    const within = Math.max(0, Math.min(n, Math.floor(b.tokens)));
    b.tokens -= within;
    this.buckets.set(tenant, b);
    if (this.buckets.size > 10_000)
      for (const [k, v] of this.buckets) if (v.at < now - KEEP_MS) this.buckets.delete(k);
    return within;
  }

  started(n: number): void {
    const s = second(this.now());
    this.starts.set(s, (this.starts.get(s) ?? 0) + n);
  }

  async close(): Promise<void> {}
}
