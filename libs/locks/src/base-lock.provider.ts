import { Clock, systemClock } from '@baton/time';
import { AcquisitionKeeper } from './acquisition-keeper';
import { BatonLease } from './baton-lease';
import { HeldKey, KeyAcquirer } from './held-key.interface';
import { LockErrorCode, LockException } from './lock.exception';
import {
  AcquireOptions,
  Lease,
  LockDriverName,
  LockObserver,
  LockProvider,
  LockState,
  MAX_HOLDER_LABEL,
  TryAcquireOptions,
} from './lock-provider.interface';

/**
 * The driver-independent half of every provider: option checks, all-or-none multi-key
 * acquisition in one fixed order, `withLock`. Drivers implement `acquireKey` and `close`.
 */
export abstract class BaseLockProvider implements LockProvider, KeyAcquirer {
  abstract readonly driver: LockDriverName;
  protected closed = false;
  private observer: LockObserver | undefined;

  /** `clock`: the holder's time source (expiries, renewals, waits); the real clock by default. */
  constructor(protected readonly clock: Clock = systemClock) {}

  observe(observer: LockObserver): void {
    this.observer = observer;
  }

  abstract acquireKey(
    key: string,
    ttlMs: number,
    deadline: number,
    holder?: string,
  ): Promise<HeldKey | null>;

  abstract inspectKey(key: string): Promise<LockState>;

  abstract close(): Promise<void>;

  async acquire(keys: string | readonly string[], options: AcquireOptions): Promise<Lease> {
    const lease = await this.take(keys, options);
    if (!lease) {
      throw new LockException(
        LockErrorCode.LOCK_TIMEOUT,
        `could not take ${this.describe(keys)} within ${options.waitMs ?? 0} ms`,
        { keys, waitMs: options.waitMs ?? 0 },
      );
    }
    return lease;
  }

  tryAcquire(keys: string | readonly string[], options: TryAcquireOptions): Promise<Lease | null> {
    return this.take(keys, { ...options, waitMs: 0 });
  }

  async withLock<T>(
    keys: string | readonly string[],
    options: AcquireOptions,
    fn: (lease: Lease) => Promise<T>,
  ): Promise<T> {
    const lease = await this.acquire(keys, { autoRenew: true, ...options });
    try {
      return await fn(lease);
    } finally {
      // A lease lost during fn has nothing left to free; fn's own error wins over this one.
      await lease.release().catch(() => undefined);
    }
  }

  async inspect(keys: readonly string[]): Promise<LockState[]> {
    if (this.closed)
      throw new LockException(LockErrorCode.CLOSED, `${this.driver} provider is closed`);
    if (!Array.isArray(keys) || keys.some((k) => typeof k !== 'string' || k.length === 0)) {
      throw new LockException(LockErrorCode.INVALID_CONFIG, 'lock keys must be non-empty strings');
    }
    return Promise.all([...new Set(keys)].map((k) => this.inspectKey(k)));
  }

  /** `acquire` and `tryAcquire`, timed for the observer. */
  private async take(
    keys: string | readonly string[],
    options: AcquireOptions,
  ): Promise<Lease | null> {
    const observer = this.observer;
    if (!observer) return this.takeOnce(keys, options);
    const started = this.clock.monotonic();
    let acquiredAt = started;
    const since = (t: number) => (this.clock.monotonic() - t) / 1000;
    try {
      const lease = await this.takeOnce(keys, options, () =>
        observer.released(this.driver, since(acquiredAt)),
      );
      observer.acquired(this.driver, lease ? 'acquired' : 'busy', since(started));
      acquiredAt = this.clock.monotonic();
      return lease;
    } catch (err) {
      observer.acquired(this.driver, 'error', since(started));
      throw err;
    }
  }

  private async takeOnce(
    keys: string | readonly string[],
    options: AcquireOptions,
    onReleased?: () => void,
  ): Promise<Lease | null> {
    if (this.closed)
      throw new LockException(LockErrorCode.CLOSED, `${this.driver} provider is closed`);
    const ordered = normaliseKeys(keys);
    const { ttlMs, holder } = options;
    const waitMs = options.waitMs ?? 0;
    if (
      holder !== undefined &&
      (typeof holder !== 'string' || holder.length === 0 || holder.length > MAX_HOLDER_LABEL)
    ) {
      throw new LockException(
        LockErrorCode.INVALID_CONFIG,
        `holder must be a string of 1 to ${MAX_HOLDER_LABEL} characters`,
      );
    }
    if (!Number.isInteger(ttlMs) || ttlMs <= 0) {
      throw new LockException(
        LockErrorCode.INVALID_CONFIG,
        `ttlMs must be a positive integer, got ${ttlMs}`,
      );
    }
    if (!Number.isFinite(waitMs) || waitMs < 0) {
      throw new LockException(LockErrorCode.INVALID_CONFIG, `waitMs must be >= 0, got ${waitMs}`);
    }
    const deadline = this.clock.now() + waitMs;
    for (;;) {
      const keeper = await this.takeAll(ordered, ttlMs, deadline, holder);
      if (keeper === null) return null;
      if (keeper !== RETRY) {
        const renew = options.autoRenew ?? false;
        return new BatonLease(
          keeper.keys,
          ttlMs,
          keeper.expiresAt(),
          renew,
          onReleased,
          this.clock,
        );
      }
      // A key was lost while the later ones were awaited: everything was freed, start over.
      if (this.clock.now() >= deadline) return null;
    }
  }

  /**
   * One pass over the keys in order, keeping those already taken alive while waiting for the
   * next. Resolves the keeper when every key is held with time left, null on timeout, RETRY
   * when a held key was lost or refused renewal on the way (all keys freed).
   */
  private async takeAll(
    ordered: readonly string[],
    ttlMs: number,
    deadline: number,
    holder: string | undefined,
  ): Promise<AcquisitionKeeper | typeof RETRY | null> {
    const keeper = new AcquisitionKeeper(ttlMs, this.clock);
    try {
      // One global order (sorted) is what makes overlapping multi-key acquires deadlock-free.
      for (const key of ordered) {
        const h = await this.acquireKey(key, ttlMs, deadline, holder);
        if (!h) {
          await keeper.abandon();
          return null;
        }
        keeper.add(h);
        if (keeper.failed) break;
      }
      await keeper.settle(ordered.length > 1);
    } catch (error) {
      await keeper.abandon();
      throw error;
    }
    // The expiry is per key, from just before the attempt that took it (or its last renewal):
    // a wait longer than the TTL costs nothing, and no key can have lapsed unnoticed.
    if (keeper.failed || keeper.expiresAt() <= this.clock.now()) {
      await keeper.abandon();
      return RETRY;
    }
    return keeper;
  }

  private describe(keys: string | readonly string[]): string {
    return typeof keys === 'string' ? `"${keys}"` : keys.map((k) => `"${k}"`).join(', ');
  }
}

/** takeAll's "a held key was lost on the way, start over" outcome. */
const RETRY = Symbol('retry');

function normaliseKeys(keys: string | readonly string[]): string[] {
  const list = typeof keys === 'string' ? [keys] : [...keys];
  if (list.length === 0 || list.some((k) => typeof k !== 'string' || k.length === 0)) {
    throw new LockException(LockErrorCode.INVALID_CONFIG, 'lock keys must be non-empty strings');
  }
  return [...new Set(list)].sort();
}
