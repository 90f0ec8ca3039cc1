import { describe, expect, it } from '@jest/globals';
import { FenceGuard } from './fence-guard';
import { LockConfig } from './lock-config.interface';
import { createLockProvider, LOCK_DRIVER_NAMES } from './lock-provider.factory';
import { LockErrorCode } from './lock.exception';

describe('createLockProvider', () => {
  it('fails fast on an unknown driver name', () => {
    expect(() => createLockProvider({ driver: 'consul' } as unknown as LockConfig)).toThrow(
      expect.objectContaining({ code: LockErrorCode.UNKNOWN_DRIVER }),
    );
  });

  it('requires the chosen driver section and only that one', async () => {
    for (const driver of LOCK_DRIVER_NAMES.filter((d) => d !== 'local')) {
      expect(() => createLockProvider({ driver })).toThrow(
        expect.objectContaining({ code: LockErrorCode.INVALID_CONFIG }),
      );
    }
    const local = createLockProvider({ driver: 'local' });
    expect(local.driver).toBe('local');
    await local.close();
  });

  it('rejects a non-positive ttl', async () => {
    const local = createLockProvider({ driver: 'local' });
    await expect(local.acquire('k', { ttlMs: 0 })).rejects.toMatchObject({
      code: LockErrorCode.INVALID_CONFIG,
    });
    await local.close();
  });
});

describe('FenceGuard', () => {
  it('accepts equal or higher fences and refuses lower ones', () => {
    const guard = new FenceGuard();
    guard.check('r', 5);
    guard.check('r', 5);
    guard.check('r', 7);
    expect(() => guard.check('r', 6)).toThrow(
      expect.objectContaining({ code: LockErrorCode.STALE_FENCE }),
    );
    // Keys are independent.
    guard.check('other', 1);
    expect(guard.highestFor('r')).toBe(7);
  });
});
