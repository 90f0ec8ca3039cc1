/** The names the factory accepts; each maps to one file under `drivers/`. */
export type LockDriverName = 'local' | 'mysql' | 'redis' | 'zookeeper' | 'etcd';

/** Why a holder stopped holding without calling `release()`. */
export type LeaseLostReason =
  /** `expiresAt` passed without an `extend()`. */
  | 'expired'
  /** The backend dropped the holder: key deleted, lease revoked, znode removed. */
  | 'revoked'
  /** The ZooKeeper session expired. */
  | 'session_lost'
  /** The connection stayed down past the point where the backend must have dropped us. */
  | 'connection_lost'
  /** An automatic renewal was refused or failed. */
  | 'renewal_failed';

/** Options for `acquire`. */
export interface AcquireOptions {
  /** How long the lease lives without an `extend()`. Keep it short (seconds, not minutes). */
  ttlMs: number;
  /** How long to wait for a held key; 0 tries once. Defaults to 0. */
  waitMs?: number;
  /**
   * Renew at half the TTL until released, and report `renewal_failed` when a renewal fails
   * (BullMQ style). Off by default: a lock around a whole task is what the design forbids.
   */
  autoRenew?: boolean;
}

/** Options for `tryAcquire`: one attempt, no waiting. */
export type TryAcquireOptions = Omit<AcquireOptions, 'waitMs'>;

/** Called once when a lease is lost. */
export type LeaseLostListener = (reason: LeaseLostReason, error?: unknown) => void;

/**
 * A held lock on one or more keys. The fence is what protects a resource: pass it along with
 * every write and let the resource refuse lower fences (see `FenceGuard`), because a holder
 * can always lose its lease between a check and a write (GC pause, SIGSTOP, partition).
 */
export interface Lease {
  /** The first key in acquisition order (the only key for single-key leases). */
  readonly key: string;
  /** Every key held, in the fixed (sorted) order they were taken. */
  readonly keys: readonly string[];
  /** Fence of `key`: strictly increases for each new holder of the key, across processes and restarts. */
  readonly fence: number;
  /** Fence per key, for multi-key leases. */
  readonly fences: ReadonlyMap<string, number>;
  /** When the lease ends unless extended (holder's clock, conservative). */
  readonly expiresAt: Date;
  /** True once the lease was lost (never set by `release()`). */
  readonly lost: boolean;
  /** The reason it was lost, when `lost`. */
  readonly lostReason: LeaseLostReason | undefined;
  /** Pushes `expiresAt` one TTL further; rejects with LEASE_LOST/NOT_HOLDER when no longer held. */
  extend(): Promise<void>;
  /** Frees every key; rejects with NOT_HOLDER when a key is no longer ours (nothing of another holder is touched). */
  release(): Promise<void>;
  /** Registers a listener for the lost event; returns a function that unregisters it. */
  onLost(listener: LeaseLostListener): () => void;
}

/** Told how each acquire ended and how long leases were held (for metrics). Must not throw. */
export interface LockObserver {
  /** An acquire ended: `busy` when a key stayed held by someone else for the whole wait. */
  acquired(driver: LockDriverName, result: 'acquired' | 'busy' | 'error', seconds: number): void;
  /** A lease was released after being held `seconds`. */
  released(driver: LockDriverName, seconds: number): void;
}

/** Pluggable distributed (or local) locks with leases and fencing tokens. */
export interface LockProvider {
  /** The driver behind this provider. */
  readonly driver: LockDriverName;
  /** Sets the observer of acquires and releases (one; a later call replaces it). */
  observe(observer: LockObserver): void;
  /**
   * Takes every key or none. Multiple keys are taken in one fixed (sorted) order so two callers
   * with overlapping sets never deadlock; on timeout the keys already taken are released.
   * Rejects with LOCK_TIMEOUT after `waitMs`.
   */
  acquire(keys: string | readonly string[], options: AcquireOptions): Promise<Lease>;
  /** One attempt without waiting; resolves null when a key is held by someone else. */
  tryAcquire(keys: string | readonly string[], options: TryAcquireOptions): Promise<Lease | null>;
  /**
   * Runs `fn` under the lease (auto-renewed) and releases afterwards, also on error. `fn`
   * should check `lease.lost` (or pass `lease.fence` to the resource) before acting.
   */
  withLock<T>(
    keys: string | readonly string[],
    options: AcquireOptions,
    fn: (lease: Lease) => Promise<T>,
  ): Promise<T>;
  /** Releases nothing, closes connections; held leases expire on the backend. */
  close(): Promise<void>;
}

/** Nest injection token for the configured LockProvider. */
export const LOCK_PROVIDER = Symbol('LOCK_PROVIDER');
