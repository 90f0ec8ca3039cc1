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
  /**
   * Who is taking the keys, in words an operator can act on (e.g. `task 42 on scheduler a-1`):
   * stored with the lock in the backend so that `inspect` can name the holder. At most
   * 200 characters. Without it, `inspect` shows only the backend's random token of the holding.
   */
  holder?: string;
}

/** Options for `tryAcquire`: one attempt, no waiting. */
export type TryAcquireOptions = Omit<AcquireOptions, 'waitMs'>;

/** The longest `holder` label `acquire` takes. */
export const MAX_HOLDER_LABEL = 200;

/**
 * One key as the lock backend sees it at the moment of an `inspect` (asked of the backend, not of
 * this process's memory): by the time the answer is read it may have changed.
 */
export interface LockState {
  readonly key: string;
  /** Someone holds the key now. */
  readonly held: boolean;
  /** The `holder` label given to the acquire that holds it; null when free or when none was given. */
  readonly holder: string | null;
  /** The backend's own random id of the holding (tells two holdings apart); null when free. */
  readonly token: string | null;
  /** The fence of the holding; null when free. */
  readonly fence: number | null;
  /**
   * When the holding ends unless renewed, by the backend's account converted to this process's
   * clock; null when free, or when the backend keeps no end (ZooKeeper: a znode lives as long as
   * its holder's session).
   */
  readonly expiresAt: Date | null;
}

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
  /**
   * Reads, from the backend, who holds each key now; takes nothing and changes nothing. Answers
   * one state per distinct key, in the order given. Rejects with BACKEND_UNAVAILABLE when the
   * backend cannot say.
   */
  inspect(keys: readonly string[]): Promise<LockState[]>;
  /** Releases nothing, closes connections; held leases expire on the backend. */
  close(): Promise<void>;
}

/** Nest injection token for the configured LockProvider. */
export const LOCK_PROVIDER = Symbol('LOCK_PROVIDER');
