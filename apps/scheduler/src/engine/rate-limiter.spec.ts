import { Clock } from '../common';
import { loadSchedulerConfig } from '../config';
import { RateLimiter } from './rate-limiter';

class StillClock extends Clock {
  t = 1_000_000;
  override now(): number {
    return this.t;
  }
}

const memoryLimiter = (clock: Clock): RateLimiter =>
  new RateLimiter(clock, loadSchedulerConfig({ BATON_AUTH_MODE: 'none' }));

describe('RateLimiter (in process)', () => {
  it('lets a burst of `rate` starts through, then gives each next start a slot of its own', async () => {
    const clock = new StillClock();
    const limiter = memoryLimiter(clock);
    const limit = [{ key: 'type:x', perSecond: 4 }];
    const first = await Promise.all(['a', 'b', 'c', 'd'].map((id) => limiter.take(id, limit)));
    expect(first).toEqual([0, 0, 0, 0]);
    // Each waiting start is given the next free slot, 250 ms apart: not all the same moment.
    expect(await limiter.take('e', limit)).toBe(250);
    expect(await limiter.take('f', limit)).toBe(500);
    // Asking again answers the same slot, and reserves nothing more.
    expect(await limiter.take('e', limit)).toBe(250);
    clock.t += 250;
    expect(await limiter.take('e', limit)).toBe(0);
    expect(await limiter.take('f', limit)).toBe(250);
    // A newcomer queues behind the reserved slots.
    expect(await limiter.take('g', limit)).toBe(500);
  });

  it('gives a start the latest slot over its limits, and counts it in each', async () => {
    const clock = new StillClock();
    const limiter = memoryLimiter(clock);
    const type = { key: 'type:x', perSecond: 10 };
    const tenant = { key: 'tenant:a', perSecond: 1 };
    expect(await limiter.take('a', [type, tenant])).toBe(0);
    // The tenant allows one a second: the next of its starts goes a second later.
    expect(await limiter.take('b', [type, tenant])).toBe(1000);
    // Another tenant's start under the same type is not held back by tenant a.
    expect(await limiter.take('c', [type])).toBe(0);
  });

  it('holds a rate over time: starts asked for as fast as possible go at the rate', async () => {
    const clock = new StillClock();
    const limiter = memoryLimiter(clock);
    const limit = [{ key: 'type:y', perSecond: 50 }];
    const started: number[] = [];
    const waiting = new Map<string, number>();
    for (let ms = 0; ms < 20_000; ms += 5) {
      clock.t = 1_000_000 + ms;
      // Ten new starts ask every 5 ms (2,000/s); the waiting ones ask again at their slot.
      for (let k = 0; k < 10; k++) waiting.set(`${ms}-${k}`, clock.t);
      for (const [id, at] of waiting) {
        if (at > clock.t) continue;
        const wait = await limiter.take(id, limit);
        if (wait === 0) {
          started.push(clock.t);
          waiting.delete(id);
        } else waiting.set(id, clock.t + wait);
      }
    }
    // A burst of one second's worth, then 50 a second.
    expect(started.length).toBeLessThanOrEqual(50 * 20 + 50);
    expect(started.length).toBeGreaterThanOrEqual(50 * 20 - 5);
  });
});

describe('RateLimiter after a change of rate', () => {
  it('starts the changed limit afresh', async () => {
    const clock = new StillClock();
    const limiter = memoryLimiter(clock);
    for (const id of ['a', 'b', 'c', 'd', 'e', 'f'])
      await limiter.take(id, [{ key: 'type:z', perSecond: 2 }]);
    // At 2/s, six starts reserve slots up to two seconds out; at 1/s the next goes now.
    expect(await limiter.take('g', [{ key: 'type:z', perSecond: 1 }])).toBe(0);
  });
});
