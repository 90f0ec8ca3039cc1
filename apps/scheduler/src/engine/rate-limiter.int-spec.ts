import Redis from 'ioredis';
import { Clock } from '../common';
import { loadSchedulerConfig } from '../config';
import { RateLimiter } from './rate-limiter';
import { eventually } from '../../../../test/support/processes';

const PREFIX = `baton-test-limits-${process.pid}-${Date.now()}`;

/** Two schedulers' limiters over the machine's Redis: the limit holds for both together. */
describe('RateLimiter over Redis (fleet-wide)', () => {
  const env = { BATON_AUTH_MODE: 'none', BATON_QUEUE: 'redis', BATON_QUEUE_PREFIX: PREFIX };
  let a: RateLimiter;
  let b: RateLimiter;

  beforeAll(async () => {
    const probe = new Redis({ lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
      await probe.connect();
      await probe.ping();
    } catch (err) {
      throw new Error(
        `Redis at 127.0.0.1:6379 is not reachable (${(err as Error).message}): run \`bash scripts/services.sh\``,
      );
    } finally {
      probe.disconnect();
    }
    a = new RateLimiter(new Clock(), loadSchedulerConfig(env));
    b = new RateLimiter(new Clock(), loadSchedulerConfig(env));
  });

  afterAll(async () => {
    await a?.onApplicationShutdown();
    await b?.onApplicationShutdown();
    const redis = new Redis();
    const keys = await redis.keys(`{${PREFIX}:limits}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it('shares one limit between instances, and reserves a slot per waiting start', async () => {
    const limit = [{ key: 'type:shared', perSecond: 10 }];
    const burst = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).take(`t${i}`, limit)),
    );
    expect(burst).toEqual(Array(10).fill(0));
    // The eleventh start, on either instance, waits for its slot (100 ms apart, Redis's clock).
    const w1 = await a.take('t10', limit);
    const w2 = await b.take('t11', limit);
    expect(w1).toBeGreaterThan(0);
    expect(w1).toBeLessThanOrEqual(100);
    expect(w2).toBeGreaterThan(100);
    expect(w2).toBeLessThanOrEqual(200);
    // Asking again (on the other instance) answers its own slot, no later. On a slow box the slot
    // may have come by then: the answer is 0 and the start is taken (its reservation ends).
    const again = await b.take('t10', limit);
    expect(again).toBeLessThanOrEqual(w1);
    // Once the later slot is due (on Redis's clock), both starts go at once.
    await eventually(
      async () => ((await b.take('t11', limit)) === 0 ? true : undefined),
      10_000,
      'the slot of t11 due',
    );
    // t10's slot came before t11's: still held, it goes at once (a start taken above is gone).
    if (again > 0) expect(await a.take('t10', limit)).toBe(0);
  });

  it('keeps limits under different keys apart', async () => {
    expect(await a.take('x1', [{ key: 'type:one', perSecond: 1 }])).toBe(0);
    expect(await a.take('x2', [{ key: 'type:two', perSecond: 1 }])).toBe(0);
    expect(await b.take('x3', [{ key: 'type:one', perSecond: 1 }])).toBeGreaterThan(0);
  });
});
