import { Clock, systemClock, Timer } from '@baton/time';
import { HeldKey } from './held-key.interface';
import { LeaseRenewer } from './lease-renewer';
import { LockErrorCode, LockException } from './lock.exception';
import { Lease, LeaseLostListener, LeaseLostReason } from './lock-provider.interface';

/**
 * The one Lease implementation: drivers only supply HeldKeys. Keeps the holder-side clock
 * (a lease whose TTL passed is reported lost even if the backend has not noticed yet), the
 * optional renewer, and the once-only lost event.
 */
export class BatonLease implements Lease {
  readonly keys: readonly string[];
  readonly fences: ReadonlyMap<string, number>;
  private expiry: Date;
  private lostAs: LeaseLostReason | undefined;
  private released = false;
  private releasing: Promise<void> | undefined;
  /** Keys whose release the backend confirmed (or answered "not yours"): never released twice. */
  private readonly freed = new Set<HeldKey>();
  private readonly listeners = new Set<LeaseLostListener>();
  private expiryTimer: Timer | undefined;
  private renewer: LeaseRenewer | undefined;

  constructor(
    private readonly held: readonly HeldKey[],
    private readonly ttlMs: number,
    expiresAt: number,
    autoRenew: boolean,
    /** Called once, when the release is done (for the time the lease was held). */
    private readonly onReleased?: () => void,
    /** The holder's clock: the expiry timer and every "now" of the lease. */
    private readonly clock: Clock = systemClock,
  ) {
    this.keys = held.map((h) => h.key);
    this.fences = new Map(held.map((h) => [h.key, h.fence]));
    // The earliest end over the keys, each measured from just before the attempt that took it
    // (or its last renewal): the holder never believes in a longer lease than the backend granted.
    this.expiry = new Date(expiresAt);
    // A loss the driver saw before this point is replayed here, synchronously.
    for (const h of held) h.setLostHandler((reason, error) => this.markLost(reason, error));
    // Already past its end (or lost): the lease is born lost, never handed out as held.
    this.armExpiry();
    if (autoRenew && !this.lost) {
      this.renewer = new LeaseRenewer(
        ttlMs,
        () => this.expiresAt.getTime(),
        () => this.extend(),
        (error) => this.markLost('renewal_failed', error),
        clock,
      );
      this.renewer.start();
    }
  }

  get key(): string {
    return this.keys[0];
  }

  get fence(): number {
    return this.held[0].fence;
  }

  get expiresAt(): Date {
    let end = this.expiry.getTime();
    for (const h of this.held) if (h.validUntil) end = Math.min(end, h.validUntil());
    return end === this.expiry.getTime() ? this.expiry : new Date(end);
  }

  /**
   * Read against the clock, not only set by the expiry timer: after a stall (a blocked event
   * loop, a stopped process) the timer fires late, and until then the backend may already have
   * handed the key to someone else. Reading past the end reports the loss at once.
   */
  get lost(): boolean {
    return this.lostReason !== undefined;
  }

  get lostReason(): LeaseLostReason | undefined {
    if (!this.lostAs && !this.released) {
      const now = this.clock.now();
      // Told to listeners (and to the backend) after the read, not inside the caller's `if`.
      if (now >= this.expiry.getTime()) this.expireNow('expired', true);
      // A backend's own bound (a ZooKeeper session not heard from in time), for the reason its
      // driver gives, though the client may not have said so yet.
      else {
        const lapsed = this.held.find((h) => h.validUntil && now >= h.validUntil());
        if (lapsed) this.expireNow(lapsed.lapseReason?.() ?? 'session_lost', true);
      }
    }
    return this.lostAs;
  }

  async extend(): Promise<void> {
    this.assertUsable('extend');
    const startedAt = this.clock.now();
    try {
      await Promise.all(this.held.map((h) => h.extend(this.ttlMs)));
    } catch (error) {
      // The backend said "not yours": the lease is gone. A transport error leaves it to the
      // clock (or the renewer) to decide, as the key may still be ours.
      if (
        LockException.is(error, LockErrorCode.NOT_HOLDER) ||
        LockException.is(error, LockErrorCode.LEASE_LOST)
      ) {
        this.markLost('revoked', error);
      }
      throw error instanceof LockException
        ? error
        : new LockException(LockErrorCode.BACKEND_UNAVAILABLE, 'extend failed', undefined, {
            cause: error,
          });
    }
    // The holder's clock may have passed expiresAt while the call was in flight.
    this.assertUsable('extend');
    this.expiry = new Date(startedAt + this.ttlMs);
    this.armExpiry();
  }

  release(): Promise<void> {
    if (this.released) return Promise.resolve();
    // Concurrent calls share one round of backend calls.
    this.releasing ??= this.releaseHeld().finally(() => (this.releasing = undefined));
    return this.releasing;
  }

  /**
   * Released only once the backend confirmed (or said "not yours"): after a transport error
   * the key may still be ours, so a retry goes to the backend again and the expiry clock stays
   * armed to report the loss if no retry succeeds.
   */
  private async releaseHeld(): Promise<void> {
    this.renewer?.stop();
    const pending = this.held.filter((h) => !this.freed.has(h));
    const results = await Promise.allSettled(pending.map((h) => h.release()));
    let refused: unknown;
    let failed: unknown;
    results.forEach((r, i) => {
      if (r.status === 'fulfilled') {
        this.freed.add(pending[i]);
      } else if (
        LockException.is(r.reason, LockErrorCode.NOT_HOLDER) ||
        LockException.is(r.reason, LockErrorCode.LEASE_LOST)
      ) {
        this.freed.add(pending[i]);
        refused ??= r.reason;
      } else {
        failed ??= r.reason;
      }
    });
    if (failed !== undefined) {
      throw failed instanceof LockException
        ? failed
        : new LockException(LockErrorCode.BACKEND_UNAVAILABLE, 'release failed', undefined, {
            cause: failed,
          });
    }
    this.released = true;
    this.clock.clearTimeout(this.expiryTimer);
    this.onReleased?.();
    if (refused !== undefined) throw refused;
  }

  onLost(listener: LeaseLostListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private assertUsable(operation: string): void {
    if (this.released) {
      throw new LockException(LockErrorCode.NOT_HOLDER, `cannot ${operation} a released lease`, {
        keys: this.keys,
      });
    }
    if (this.lostReason) {
      throw new LockException(
        LockErrorCode.LEASE_LOST,
        `cannot ${operation}: lease on ${this.keys.join(', ')} was lost (${this.lostAs})`,
        { keys: this.keys, reason: this.lostAs },
      );
    }
  }

  private armExpiry(): void {
    this.clock.clearTimeout(this.expiryTimer);
    const delay = this.expiry.getTime() - this.clock.now();
    if (delay <= 0) {
      this.expireNow();
      return;
    }
    this.expiryTimer = this.clock.setTimeout(() => this.expireNow(), delay).unref();
  }

  private expireNow(reason: LeaseLostReason = 'expired', later = false): void {
    if (this.lostAs || this.released) return;
    this.markLost(reason, undefined, later);
    const expire = (): void => {
      for (const h of this.held) void h.expire?.().catch(() => undefined);
    };
    if (later) queueMicrotask(expire);
    else expire();
  }

  /** Lost from now on; the listeners hear it now, or (`later`) once the current code is done. */
  private markLost(reason: LeaseLostReason, error?: unknown, later = false): void {
    if (this.lostAs || this.released) return;
    this.lostAs = reason;
    this.renewer?.stop();
    this.clock.clearTimeout(this.expiryTimer);
    const tell = (): void => {
      for (const listener of this.listeners) {
        try {
          listener(reason, error);
        } catch {
          // A failing listener must not keep the others from hearing about the loss.
        }
      }
    };
    if (later) queueMicrotask(tell);
    else tell();
  }
}
