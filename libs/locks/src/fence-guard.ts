import { LockErrorCode, LockException } from './lock.exception';

/**
 * The resource owner's side of fencing: remembers the highest fence accepted per key and
 * refuses lower ones. A lock holder that was paused past its TTL still believes it holds the
 * lock; only the resource can tell, because a newer holder has since written with a higher fence.
 * In-memory: a resource that lives in a database should store the fence in the row and write
 * with `... WHERE fence <= :fence` instead, which is the same rule.
 */
export class FenceGuard {
  private readonly highest = new Map<string, number>();

  /** Accepts `fence` for `key` if no higher fence was accepted before; throws STALE_FENCE otherwise. */
  check(key: string, fence: number): void {
    const seen = this.highest.get(key);
    if (seen !== undefined && fence < seen) {
      throw new LockException(
        LockErrorCode.STALE_FENCE,
        `fence ${fence} for "${key}" is older than ${seen}: the caller lost its lease`,
        { key, fence, highest: seen },
      );
    }
    this.highest.set(key, fence);
  }

  /** The highest fence accepted for `key`, if any. */
  highestFor(key: string): number | undefined {
    return this.highest.get(key);
  }
}
