import { describe, expect, it } from '@jest/globals';
import { BatonLease } from './baton-lease';
import { HeldKey } from './held-key.interface';
import { LockErrorCode, LockException } from './lock.exception';
import { LeaseLostReason } from './lock-provider.interface';
import { LossLatch } from './loss-latch';

/** A HeldKey whose backend is a script: each release() takes the next outcome. */
function fakeKey(
  key: string,
  releases: ('ok' | 'down' | 'not-holder')[] = ['ok'],
): HeldKey & { calls: number; loss: LossLatch } {
  const loss = new LossLatch();
  const held = {
    key,
    fence: 1,
    takenAt: Date.now(),
    calls: 0,
    loss,
    extend: async () => undefined,
    release: async () => {
      const outcome = releases[held.calls++] ?? 'ok';
      if (outcome === 'down') {
        throw new LockException(LockErrorCode.BACKEND_UNAVAILABLE, 'connection reset');
      }
      if (outcome === 'not-holder') throw new LockException(LockErrorCode.NOT_HOLDER, 'not yours');
    },
    setLostHandler: (handler: (reason: LeaseLostReason, error?: unknown) => void) =>
      loss.setHandler(handler),
  };
  return held;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('BatonLease', () => {
  it('auto-renews in time even when each renewal takes a third of the TTL', async () => {
    const key = fakeKey('slow');
    key.extend = () => sleep(60);
    const lease = new BatonLease([key], 200, Date.now() + 200, true);
    await sleep(1000); // five TTLs
    expect(lease.lost).toBe(false);
    await lease.release();
  });

  it('is born lost when a key was lost before the lease set its handlers', () => {
    const first = fakeKey('a');
    first.loss.report('revoked');
    const lease = new BatonLease([first, fakeKey('b')], 5000, Date.now() + 5000, false);
    expect(lease.lost).toBe(true);
    expect(lease.lostReason).toBe('revoked');
  });

  it('is born expired, synchronously, when its end is already past', async () => {
    const lease = new BatonLease([fakeKey('a')], 1000, Date.now() - 1, false);
    expect(lease.lost).toBe(true);
    expect(lease.lostReason).toBe('expired');
    await expect(lease.extend()).rejects.toMatchObject({ code: LockErrorCode.LEASE_LOST });
  });

  it('lets a release that failed in transport be retried against the backend', async () => {
    const key = fakeKey('a', ['down', 'ok']);
    const lease = new BatonLease([key], 5000, Date.now() + 5000, false);
    await expect(lease.release()).rejects.toMatchObject({
      code: LockErrorCode.BACKEND_UNAVAILABLE,
    });
    await expect(lease.release()).resolves.toBeUndefined();
    expect(key.calls).toBe(2);
    // Released now: a third call is a no-op.
    await lease.release();
    expect(key.calls).toBe(2);
  });

  it('retries only the keys whose release failed, and keeps the expiry clock meanwhile', async () => {
    const a = fakeKey('a', ['ok']);
    const b = fakeKey('b', ['down', 'down']);
    const lease = new BatonLease([a, b], 300, Date.now() + 300, false);
    const lost = new Promise<LeaseLostReason>((ok) => lease.onLost(ok));
    await expect(lease.release()).rejects.toMatchObject({
      code: LockErrorCode.BACKEND_UNAVAILABLE,
    });
    await expect(lease.release()).rejects.toMatchObject({
      code: LockErrorCode.BACKEND_UNAVAILABLE,
    });
    expect([a.calls, b.calls]).toEqual([1, 2]);
    // Never confirmed released: the holder must still hear that the lease ran out.
    await expect(lost).resolves.toBe('expired');
  });

  it('ends a release refused by the backend as released, reporting NOT_HOLDER', async () => {
    const key = fakeKey('a', ['not-holder']);
    const lease = new BatonLease([key], 200, Date.now() + 200, false);
    await expect(lease.release()).rejects.toMatchObject({ code: LockErrorCode.NOT_HOLDER });
    await lease.release();
    expect(key.calls).toBe(1);
    await sleep(300);
    expect(lease.lost).toBe(false);
  });
});
