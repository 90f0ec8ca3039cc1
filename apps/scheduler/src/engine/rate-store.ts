import { Clock } from '../common';

/** One limit to respect: at most `perSecond` starts a second under `key` (bursts up to that). */
export interface RateLimit {
  key: string;
  perSecond: number;
}

/** A start whose slot is this close is let through now (clocks of instances and Redis differ a little). */
export const SLACK_MS = 20;
/** How long a reserved slot and an idle limit's state are kept after they matter. */
export const KEEP_MS = 60_000;

/** A limit's state is kept per rate: a limit changed through the API starts afresh. */
export const stateKey = (l: RateLimit): string => `${l.key}@${l.perSecond}`;

/** Spacing and burst of a limit, in the terms of the algorithm below. */
export function shape(l: RateLimit): { interval: number; tolerance: number } {
  const interval = 1000 / l.perSecond;
  // A burst of one second's worth: `perSecond` starts at once after a quiet second.
  return { interval, tolerance: interval * (Math.max(1, l.perSecond) - 1) };
}

/**
 * Where the limits' state lives: in this process (the embedded default, one instance), or in Redis
 * (the Redis queue), shared by every instance so that a limit holds for the fleet, not per
 * instance.
 *
 * The algorithm is a generic cell rate with reservations: each limit keeps the theoretical time
 * of its next start; a start may go when that time, less the burst tolerance, has come. A start
 * that may not go yet is given the slot it may go at, and the slot is reserved for it (the limit
 * moves on past it), so the task waits once, until its own slot, instead of every waiting task
 * asking again at the next free moment.
 */
export interface RateStore {
  /** 0 when the start may go now, else the milliseconds until its reserved slot. */
  take(holder: string, limits: readonly RateLimit[]): Promise<number>;
  close(): Promise<void>;
}

export class MemoryRateStore implements RateStore {
  private readonly next = new Map<string, number>();
  private readonly reserved = new Map<string, number>();
  private calls = 0;

  constructor(private readonly clock: Clock) {}

  async take(holder: string, limits: readonly RateLimit[]): Promise<number> {
    const now = this.clock.now();
    if (++this.calls % 1000 === 0) this.prune(now);
    const held = this.reserved.get(holder);
    if (held !== undefined) {
      if (held <= now + SLACK_MS) {
        this.reserved.delete(holder);
        return 0;
      }
      return Math.ceil(held - now);
    }
    let slot = now;
    for (const l of limits) {
      const tat = Math.max(this.next.get(stateKey(l)) ?? now, now);
      slot = Math.max(slot, tat - shape(l).tolerance);
    }
    // Each limit counts the start now (one interval more of its budget), the binding one at the
    // slot it gave; the frontier of a limit never jumps ahead to another limit's slot.
    for (const l of limits) {
      const tat = Math.max(this.next.get(stateKey(l)) ?? now, now);
      this.next.set(stateKey(l), tat + shape(l).interval);
    }
    if (slot <= now + SLACK_MS) return 0;
    this.reserved.set(holder, slot);
    return Math.ceil(slot - now);
  }

  async close(): Promise<void> {}

  /** Forgets slots nobody came for (a cancelled task) and limits idle for long. */
  private prune(now: number): void {
    for (const [k, at] of this.reserved) if (at + KEEP_MS < now) this.reserved.delete(k);
    for (const [k, at] of this.next) if (at + KEEP_MS < now) this.next.delete(k);
  }
}
