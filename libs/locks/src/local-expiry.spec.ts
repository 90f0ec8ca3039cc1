import { describe, expect, it } from '@jest/globals';
import { ManualClock } from '@baton/time';
import { LocalLockDriver } from './drivers/local.lock.driver';
import { LockErrorCode } from './lock.exception';

describe('local lock driver on a ManualClock', () => {
  it('holds a 1000 ms lease until the clock passes its TTL, then hands the key on', async () => {
    const clock = new ManualClock();
    const locks = new LocalLockDriver({}, clock);
    const first = await locks.acquire('k', { ttlMs: 1000 });

    await clock.advance(999);
    // Still the first holder's: a second acquire without a wait is refused at once.
    await expect(locks.acquire('k', { ttlMs: 1000 })).rejects.toMatchObject({
      code: LockErrorCode.LOCK_TIMEOUT,
    });
    expect(await locks.tryAcquire('k', { ttlMs: 1000 })).toBeNull();
    expect(first.lost).toBe(false);

    await clock.advance(2);
    // Past the TTL: the first holder hears it lost, a second holder takes the key with a higher fence.
    expect(first.lost).toBe(true);
    expect(first.lostReason).toBe('expired');
    const second = await locks.acquire('k', { ttlMs: 1000 });
    expect(second.fence).toBeGreaterThan(first.fence);
    expect(second.expiresAt.getTime()).toBe(clock.now() + 1000);

    await second.release();
    await locks.close();
  });
});
