import { beforeEach, describe, expect, it } from '@jest/globals';
import { ManualClock } from '@baton/time';
import { BatonLease } from './baton-lease';
import { HeldKey } from './held-key.interface';
import { LockErrorCode, LockException } from './lock.exception';
import { LeaseLostReason } from './lock-provider.interface';
import { LossLatch } from './loss-latch';

/** The holder's clock of each case: the lease, its renewer and the fake backend all run on it. */
let clock: ManualClock;

/** A HeldKey whose backend is a script: each release() takes the next outcome. */
function fakeKey(
  key: string,
  releases: ('ok' | 'down' | 'not-holder')[] = ['ok'],
): HeldKey & { calls: number; loss: LossLatch } {
  const loss = new LossLatch();
  const held = {
    key,
    fence: 1,
    takenAt: clock.now(),
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

/** A lease on the case's clock, as a driver hands it out. */
const leaseOf = (keys: HeldKey[], ttlMs: number, expiresAt: number, autoRenew: boolean) =>
  new BatonLease(keys, ttlMs, expiresAt, autoRenew, undefined, clock);

describe('BatonLease', () => {
  beforeEach(() => {
    clock = new ManualClock();
  });

  it('auto-renews in time even when each renewal takes a third of the TTL', async () => {
    const key = fakeKey('slow');
    const renewals: number[] = [];
    key.extend = () => {
      renewals.push(clock.now());
      return clock.sleep(60);
    };
    const t0 = clock.now();
    const lease = leaseOf([key], 200, t0 + 200, true);
    // The first renewal is due half a TTL before the end, not earlier.
    await clock.advance(99);
    expect(renewals).toEqual([]);
    await clock.advance(1);
    expect(renewals).toEqual([t0 + 100]);
    await clock.advance(900); // five TTLs in all
    expect(lease.lost).toBe(false);
    // Each next one half a TTL before the end the last one set (its start + TTL).
    expect(renewals.map((at) => at - t0)).toEqual([
      100, 200, 300, 400, 500, 600, 700, 800, 900, 1000,
    ]);
    // The one that started at 1000 is still out (60 ms): the end is the one before it set.
    expect(lease.expiresAt.getTime()).toBe(t0 + 900 + 200);
    await lease.release();
    // Released: no renewal and no expiry left waiting.
    await clock.advance(1000);
    expect(renewals).toHaveLength(10);
    expect(lease.lost).toBe(false);
    expect(clock.pending()).toBe(0);
  });

  it('is born lost when a key was lost before the lease set its handlers', () => {
    const first = fakeKey('a');
    first.loss.report('revoked');
    const lease = leaseOf([first, fakeKey('b')], 5000, clock.now() + 5000, false);
    expect(lease.lost).toBe(true);
    expect(lease.lostReason).toBe('revoked');
  });

  it('is born expired, synchronously, when its end is already past', async () => {
    const lease = leaseOf([fakeKey('a')], 1000, clock.now() - 1, false);
    expect(lease.lost).toBe(true);
    expect(lease.lostReason).toBe('expired');
    await expect(lease.extend()).rejects.toMatchObject({ code: LockErrorCode.LEASE_LOST });
  });

  it('lets a release that failed in transport be retried against the backend', async () => {
    const key = fakeKey('a', ['down', 'ok']);
    const lease = leaseOf([key], 5000, clock.now() + 5000, false);
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
    const lease = leaseOf([a, b], 300, clock.now() + 300, false);
    const lost: LeaseLostReason[] = [];
    lease.onLost((reason) => lost.push(reason));
    await expect(lease.release()).rejects.toMatchObject({
      code: LockErrorCode.BACKEND_UNAVAILABLE,
    });
    await expect(lease.release()).rejects.toMatchObject({
      code: LockErrorCode.BACKEND_UNAVAILABLE,
    });
    expect([a.calls, b.calls]).toEqual([1, 2]);
    // Never confirmed released: the holder must still hear that the lease ran out, at its TTL.
    await clock.advance(299);
    expect(lost).toEqual([]);
    await clock.advance(1);
    expect(lost).toEqual(['expired']);
    expect(lease.lost).toBe(true);
  });

  it('ends a release refused by the backend as released, reporting NOT_HOLDER', async () => {
    const key = fakeKey('a', ['not-holder']);
    const lease = leaseOf([key], 200, clock.now() + 200, false);
    await expect(lease.release()).rejects.toMatchObject({ code: LockErrorCode.NOT_HOLDER });
    await lease.release();
    expect(key.calls).toBe(1);
    // Past its TTL: a released lease is never reported lost (its expiry timer is gone).
    expect(clock.pending()).toBe(0);
    await clock.advance(300);
    expect(lease.lost).toBe(false);
  });

  it('is lost as soon as its end has passed, also when the expiry timer has not fired yet', async () => {
    const key = fakeKey('stalled');
    const lease = leaseOf([key], 200, clock.now() + 200, false);
    const lost: LeaseLostReason[] = [];
    lease.onLost((reason) => lost.push(reason));
    // A stopped process: time passes the end and no timer fires.
    clock.stall(150);
    expect(lease.lost).toBe(false);
    clock.stall(50);
    expect(lease.lost).toBe(true);
    expect(lease.lostReason).toBe('expired');
    // The listeners hear it after the read, not inside it.
    expect(lost).toEqual([]);
    await Promise.resolve();
    expect(lost).toEqual(['expired']);
    await expect(lease.extend()).rejects.toMatchObject({ code: LockErrorCode.LEASE_LOST });
    // The late timer does not report it twice.
    await clock.advance(0);
    expect(lost).toEqual(['expired']);
  });

  it("is lost as session_lost once read past a backend's own bound (a session not heard from)", () => {
    const key = fakeKey('session');
    const heardUntil = clock.now() + 100;
    const lease = leaseOf(
      [{ ...key, validUntil: () => heardUntil }],
      30_000,
      clock.now() + 30_000,
      false,
    );
    clock.stall(99);
    expect(lease.lost).toBe(false);
    clock.stall(1);
    expect(lease.lostReason).toBe('session_lost');
  });

  it('is lost for the reason the driver gives once its bound passed', () => {
    const key = fakeKey('connection');
    const heardUntil = clock.now() + 100;
    const lease = leaseOf(
      [{ ...key, validUntil: () => heardUntil, lapseReason: () => 'connection_lost' as const }],
      30_000,
      clock.now() + 30_000,
      false,
    );
    clock.stall(100);
    expect(lease.lostReason).toBe('connection_lost');
  });
});
