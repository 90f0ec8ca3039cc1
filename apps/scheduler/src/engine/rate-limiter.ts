import { Injectable } from '@nestjs/common';
import { Clock } from '../common';

interface Bucket {
  tokens: number;
  at: number;
  rate: number;
}

/** One limit to respect: at most `perSecond` starts a second under `key` (bursts up to that). */
export interface RateLimit {
  key: string;
  perSecond: number;
}

/**
 * Token buckets for task starts, per task type and per tenant (docs/architecture.md). A start takes
 * a token from every bucket that applies, or from none; a refused start learns how long to wait.
 * Buckets live in this process: with N scheduler instances the fleet-wide rate is up to N times.
 */
@Injectable()
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly clock: Clock) {}

  /** 0 when the start may go (tokens taken), else the milliseconds until it may. */
  take(limits: readonly RateLimit[]): number {
    const now = this.clock.now();
    let wait = 0;
    const buckets = limits.map((l) => {
      const b = this.refill(l, now);
      if (b.tokens < 1) wait = Math.max(wait, Math.ceil(((1 - b.tokens) / b.rate) * 1000));
      return b;
    });
    if (wait > 0) return wait;
    for (const b of buckets) b.tokens -= 1;
    return 0;
  }

  private refill(limit: RateLimit, now: number): Bucket {
    let b = this.buckets.get(limit.key);
    if (!b || b.rate !== limit.perSecond) {
      b = { tokens: limit.perSecond, at: now, rate: limit.perSecond };
      this.buckets.set(limit.key, b);
    }
    b.tokens = Math.min(b.rate, b.tokens + ((now - b.at) / 1000) * b.rate);
    b.at = now;
    return b;
  }
}
