import { Clock, systemClock } from '@baton/time';

/** Resolves after `ms` on `clock`; the timer does not keep the process alive. */
export function sleep(ms: number, clock: Clock = systemClock): Promise<void> {
  return clock.sleep(ms, undefined, { unref: true });
}

/**
 * Exponential backoff with jitter for backends without notifications, bounded by the deadline.
 * Jitter keeps a crowd of waiters from polling in lockstep.
 */
export class Backoff {
  private current: number;

  constructor(
    private readonly initialMs: number,
    private readonly maxMs: number,
    private readonly clock: Clock = systemClock,
  ) {
    this.current = initialMs;
  }

  /** The next delay, never past `deadline` (epoch ms). */
  next(deadline: number): number {
    const delay = this.current * (0.5 + Math.random() / 2);
    this.current = Math.min(this.maxMs, this.current * 2);
    return Math.max(0, Math.min(delay, deadline - this.clock.now()));
  }
}

/**
 * Wakes waiters of a key when the same process sees it freed, so a local hand-off does not
 * wait for a poll or a round trip through the backend.
 */
export class KeyWaiters {
  private readonly waiters = new Map<string, Set<() => void>>();
  /** Notifications per key, so a wake-up between a failed attempt and `wait` is not lost. */
  private readonly epochs = new Map<string, number>();
  private sequence = 0;
  /** What an absent key reads as; moved on by every clear. */
  private floor = 0;

  constructor(private readonly clock: Clock = systemClock) {}

  /** The key's notification mark; pass it to `wait` after the attempt that preceded it. */
  epoch(key: string): number {
    return this.epochs.get(key) ?? this.floor;
  }

  /**
   * Resolves when `notify(key)` is called or after `ms`, whichever comes first; at once when
   * the key was notified since `sinceEpoch`.
   */
  wait(key: string, ms: number, sinceEpoch?: number): Promise<void> {
    if (sinceEpoch !== undefined && this.epoch(key) !== sinceEpoch) return Promise.resolve();
    return new Promise((resolve) => {
      let set = this.waiters.get(key);
      if (!set) this.waiters.set(key, (set = new Set()));
      const done = (): void => {
        this.clock.clearTimeout(timer);
        const current = this.waiters.get(key);
        current?.delete(done);
        if (current?.size === 0) this.waiters.delete(key);
        resolve();
      };
      const timer = this.clock.setTimeout(done, Math.max(0, ms)).unref();
      set.add(done);
    });
  }

  /** Wakes every waiter of `key`. */
  notify(key: string): void {
    // Counted only while someone is waiting or trying; a bounded map is enough for that. Values
    // come from one sequence and a clear moves the floor to a fresh one, so an epoch never
    // returns to a value a trier read before: at worst a spurious wake-up, never a missed one.
    if (this.epochs.size > 10_000) {
      this.epochs.clear();
      this.floor = ++this.sequence;
    }
    this.epochs.set(key, ++this.sequence);
    for (const done of [...(this.waiters.get(key) ?? [])]) done();
  }

  /** Wakes everyone (used on close). */
  notifyAll(): void {
    for (const key of [...this.waiters.keys()]) this.notify(key);
  }
}
