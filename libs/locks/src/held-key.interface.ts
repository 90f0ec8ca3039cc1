import { LeaseLostReason, LockState } from './lock-provider.interface';

/**
 * What a driver hands back for one key it took: the narrow surface a `BatonLease` needs.
 * Drivers report backend-side loss (session expired, key revoked) through `onLost`.
 */
export interface HeldKey {
  readonly key: string;
  readonly fence: number;
  /**
   * The holder's clock just before the attempt that took the key. The backend's TTL started no
   * earlier, so `takenAt + ttlMs` is a conservative end of the key's lease.
   */
  readonly takenAt: number;
  /** Renews for `ttlMs`; rejects with LEASE_LOST/NOT_HOLDER when the key is no longer ours. */
  extend(ttlMs: number): Promise<void>;
  /** Frees the key; rejects with NOT_HOLDER when it is no longer ours. */
  release(): Promise<void>;
  /**
   * Called when the holder's own clock says the TTL passed. Drivers whose backend does not
   * expire keys by itself (ZooKeeper ephemerals live as long as the session) free it here.
   */
  expire?(): Promise<void>;
  /**
   * A bound the backend puts on the holder's belief regardless of the TTL (ZooKeeper: the last
   * server reply + session timeout − margin). The lease's `expiresAt` never goes past it, and a
   * lease read past it is lost, for the reason `lapseReason` gives (`session_lost` without it).
   */
  validUntil?(): number;
  /** Why the key is lost once `validUntil` passed (what the driver itself would report then). */
  lapseReason?(): LeaseLostReason;
  /**
   * Registers the driver's callback for backend-side loss. A loss that happened before (while
   * the other keys of a multi-key acquire were being taken) is replayed to the handler at once,
   * synchronously; a later handler replaces an earlier one.
   */
  setLostHandler(handler: (reason: LeaseLostReason, error?: unknown) => void): void;
}

/** A driver's single-key acquisition, used by `BaseLockProvider` for ordered multi-key acquire. */
export interface KeyAcquirer {
  /**
   * Takes `key` for `ttlMs`, waiting until `deadline` (epoch ms) at most; resolves null when
   * the deadline passed with the key still held elsewhere. `holder` is the caller's label, kept
   * with the lock in the backend where the driver stores a value.
   */
  acquireKey(
    key: string,
    ttlMs: number,
    deadline: number,
    holder?: string,
  ): Promise<HeldKey | null>;
  /** Reads one key's state from the backend; changes nothing. */
  inspectKey(key: string): Promise<LockState>;
}
