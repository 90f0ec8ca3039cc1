import { Clock } from '../common';
import { RateLimiter } from './rate-limiter';

class StillClock extends Clock {
  t = 1_000_000;
  override now(): number {
    return this.t;
  }
}

describe('RateLimiter', () => {
  it('lets a burst of `rate` starts through, then makes the next wait for a token', () => {
    const clock = new StillClock();
    const limiter = new RateLimiter(clock);
    const limit = [{ key: 'type:x', perSecond: 4 }];
    expect([0, 1, 2, 3].map(() => limiter.take(limit))).toEqual([0, 0, 0, 0]);
    expect(limiter.take(limit)).toBe(250);
    clock.t += 250;
    expect(limiter.take(limit)).toBe(0);
    expect(limiter.take(limit)).toBe(250);
  });

  it('takes from every bucket or from none', () => {
    const clock = new StillClock();
    const limiter = new RateLimiter(clock);
    const type = { key: 'type:x', perSecond: 10 };
    const tenant = { key: 'tenant:a', perSecond: 1 };
    expect(limiter.take([type, tenant])).toBe(0);
    expect(limiter.take([type, tenant])).toBe(1000); // the tenant is out; the type keeps its token
    expect(Array.from({ length: 9 }, () => limiter.take([type]))).toEqual(Array(9).fill(0));
    expect(limiter.take([type])).toBeGreaterThan(0);
  });

  it('never holds more than one second of tokens', () => {
    const clock = new StillClock();
    const limiter = new RateLimiter(clock);
    const limit = [{ key: 'k', perSecond: 2 }];
    clock.t += 60_000;
    expect([limiter.take(limit), limiter.take(limit), limiter.take(limit)]).toEqual([0, 0, 500]);
  });
});
