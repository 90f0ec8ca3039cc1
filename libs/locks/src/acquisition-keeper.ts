import { Clock, systemClock, Timer } from '@baton/time';
import { HeldKey } from './held-key.interface';

/**
 * The keys a multi-key acquire has taken so far, kept alive while it waits for the later ones.
 * Without it the first key's TTL runs out on the backend during a long wait for the second,
 * someone else takes it with a higher fence, and the acquire returns a lease over a key it no
 * longer holds. Each key is renewed at half its TTL (BullMQ's rhythm); a refused or failed
 * renewal, or a backend-side loss, marks the attempt failed and frees what was taken at once so
 * nobody stays blocked by an attempt that will be retried.
 */
export class AcquisitionKeeper {
  private readonly taken: HeldKey[] = [];
  /** Conservative end of each key's backend lease on the holder's clock. */
  private readonly until = new Map<HeldKey, number>();
  private readonly freed = new Set<HeldKey>();
  private timer: Timer | undefined;
  private renewing: Promise<void> | undefined;
  private stopped = false;
  private failure: { error: unknown } | undefined;

  constructor(
    private readonly ttlMs: number,
    private readonly clock: Clock = systemClock,
  ) {}

  /** The keys taken, in order. */
  get keys(): readonly HeldKey[] {
    return this.taken;
  }

  /** True once a key was refused, failed to renew, or was reported lost by the backend. */
  get failed(): boolean {
    return this.failure !== undefined;
  }

  /**
   * When the first of the keys' TTLs ends (epoch ms): the only honest expiry of the whole set.
   * (A driver's own bound, `validUntil`, moves on by itself; the lease applies it live.)
   */
  expiresAt(): number {
    let end = Infinity;
    for (const h of this.taken) end = Math.min(end, this.until.get(h)!);
    return end;
  }

  /** Adds a freshly taken key and keeps it alive from now on. */
  add(held: HeldKey): void {
    this.taken.push(held);
    this.until.set(held, held.takenAt + this.ttlMs);
    // Replaced by the lease's own handler once built; a loss until then fails the attempt.
    held.setLostHandler((reason, error) => this.fail(error ?? reason));
    if (this.failure) void this.freeAll();
    else this.schedule();
  }

  /**
   * Stops the background renewal (waiting for one in flight) and, when `confirm`, extends every
   * key but the last once more: each gets a full TTL ahead, and a key the backend dropped while
   * we waited shows up now rather than after the lease was handed out.
   */
  async settle(confirm: boolean): Promise<void> {
    this.stopped = true;
    this.clock.clearTimeout(this.timer);
    await this.renewing;
    if (!confirm || this.failure || this.taken.length < 2) return;
    await this.renew(this.taken.slice(0, -1));
  }

  /** Stops renewing and frees every key not freed yet; never rejects. */
  async abandon(): Promise<void> {
    this.stopped = true;
    this.clock.clearTimeout(this.timer);
    await this.renewing;
    await this.freeAll();
  }

  private schedule(): void {
    if (this.stopped || this.failure) return;
    this.clock.clearTimeout(this.timer);
    const due = this.expiresAt() - this.ttlMs / 2;
    this.timer = this.clock
      .setTimeout(
        () => {
          this.renewing = this.renew([...this.taken]).then(() => this.schedule());
        },
        Math.max(0, due - this.clock.now()),
      )
      .unref();
  }

  private async renew(keys: readonly HeldKey[]): Promise<void> {
    const startedAt = this.clock.now();
    try {
      await Promise.all(keys.map((h) => h.extend(this.ttlMs)));
      for (const h of keys) this.until.set(h, startedAt + this.ttlMs);
    } catch (error) {
      this.fail(error);
    }
  }

  private fail(error: unknown): void {
    if (this.failure) return;
    this.failure = { error };
    this.clock.clearTimeout(this.timer);
    // After settle() the keys belong to the caller, which checks `failed` before using them.
    if (!this.stopped) void this.freeAll();
  }

  private async freeAll(): Promise<void> {
    const pending = this.taken.filter((h) => !this.freed.has(h));
    for (const h of pending) this.freed.add(h);
    await Promise.allSettled(pending.map((h) => h.release()));
  }
}
