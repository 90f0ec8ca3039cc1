import { randomUUID } from 'node:crypto';
import { Clock, systemClock } from '@baton/time';
import { Etcd3, Lease as EtcdLease, Watcher } from 'etcd3';
import { BaseLockProvider } from '../base-lock.provider';
import { HeldKey } from '../held-key.interface';
import { EtcdLockConfig } from '../lock-config.interface';
import { LockErrorCode, LockException } from '../lock.exception';
import { LossLatch } from '../loss-latch';
import { LockState } from '../lock-provider.interface';
import { freeState, splitTokenAndLabel, tokenWithLabel } from '../lock-state';

/**
 * etcd locks: a lease with the TTL, and a transaction that creates the key under that lease only
 * if its create revision is 0 (absent). The fence is the revision of that transaction, which is
 * the key's create revision: etcd's revision is global, strictly increasing and persisted.
 * Waiters watch the key for its deletion; holders watch it too, so a revoked or expired lease is
 * reported lost as soon as etcd deletes the key. etcd leases have a whole-second TTL with a
 * server minimum (about 2 s); the holder's own clock still uses the requested TTL. The key's value
 * is the holding's random token, followed by the holder's label when one was given.
 */
export class EtcdLockDriver extends BaseLockProvider {
  readonly driver = 'etcd' as const;
  private readonly client: Etcd3;
  private readonly prefix: string;
  private readonly callTimeoutMs: number;

  constructor(config: EtcdLockConfig, clock: Clock = systemClock) {
    super(clock);
    this.prefix = config.keyPrefix ?? 'baton/lock/';
    this.callTimeoutMs = config.callTimeoutMs ?? 5000;
    this.client = new Etcd3({
      hosts: [...config.hosts],
      dialTimeout: this.callTimeoutMs,
      // gRPC compares a call's deadline with the host's own wall clock, whatever clock drives us.
      defaultCallOptions: () => ({ deadline: systemClock.now() + this.callTimeoutMs }),
    });
  }

  async acquireKey(
    key: string,
    ttlMs: number,
    deadline: number,
    label?: string,
  ): Promise<HeldKey | null> {
    const name = this.prefix + key;
    // The whole value is what extend and release compare, so the label is covered too.
    const holder = tokenWithLabel(randomUUID(), label);
    for (;;) {
      if (this.closed) throw new LockException(LockErrorCode.CLOSED, 'etcd provider is closed');
      // A fresh lease per attempt, granted after the wake-up: one granted before a long wait
      // would expire unrenewed meanwhile ("requested lease not found" at the txn).
      const attemptAt = this.clock.now();
      // Renewal is ours (extend / the lease renewer), not etcd3's background keepalive.
      const lease = this.client.lease(Math.max(1, Math.ceil(ttlMs / 1000)), {
        autoKeepAlive: false,
      });
      lease.on('lost', () => undefined);
      let revision: number;
      try {
        const leaseId = await lease.grant();
        const txn = await this.client
          .if(name, 'Create', '==', 0)
          .then(this.client.put(name).value(holder).lease(leaseId))
          .else(this.client.get(name))
          .commit();
        revision = Number(txn.header.revision);
        if (txn.succeeded) return await this.holdKey(key, name, holder, lease, revision, attemptAt);
      } catch (error) {
        await lease.revoke().catch(() => undefined);
        throw unavailable('acquire', error);
      }
      // Not awaited: the waiter should start watching at once; an unrevoked lease just expires.
      void lease.revoke().catch(() => undefined);
      if (this.clock.now() >= deadline) return null;
      await this.waitForDeletion(name, revision, deadline);
    }
  }

  /**
   * The key's value (token and label), its create revision (the fence) and its lease's remaining
   * TTL, which etcd counts in whole seconds.
   */
  async inspectKey(key: string): Promise<LockState> {
    const name = this.prefix + key;
    try {
      const res = await this.client.get(name).exec();
      const kv = res.kvs[0];
      if (!kv) return freeState(key);
      const askedAt = this.clock.now();
      const { token, label } = splitTokenAndLabel(kv.value.toString('utf8'));
      let expiresAt: Date | null = null;
      if (kv.lease && kv.lease !== '0') {
        const ttl = await this.client.leaseClient.leaseTimeToLive({ ID: kv.lease });
        // -1: the lease ended; etcd deletes the key with it.
        if (Number(ttl.TTL) < 0) return freeState(key);
        expiresAt = new Date(askedAt + Number(ttl.TTL) * 1000);
      }
      return {
        key,
        held: true,
        holder: label,
        token,
        fence: Number(kv.create_revision),
        expiresAt,
      };
    } catch (error) {
      throw unavailable('inspect', error);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.client.close();
  }

  /** Waits for a delete of `name` after `revision` (so one that already happened is not missed). */
  private async waitForDeletion(name: string, revision: number, deadline: number): Promise<void> {
    const watcher = await this.client
      .watch()
      .key(name)
      .startRevision(String(revision + 1))
      .create();
    try {
      await new Promise<void>((resolve) => {
        const timer = this.clock
          .setTimeout(resolve, Math.max(0, deadline - this.clock.now()))
          .unref();
        const done = (): void => {
          this.clock.clearTimeout(timer);
          resolve();
        };
        watcher.on('delete', done);
        // A dropped watch stream must not leave the waiter asleep until the deadline.
        watcher.on('disconnected', done);
        watcher.on('error', done);
      });
    } finally {
      await watcher.cancel().catch(() => undefined);
    }
  }

  private async holdKey(
    key: string,
    name: string,
    holder: string,
    lease: EtcdLease,
    fence: number,
    takenAt: number,
  ): Promise<HeldKey> {
    let released = false;
    const loss = new LossLatch();
    let watcher: Watcher | undefined = await this.client
      .watch()
      .key(name)
      .startRevision(String(fence + 1))
      .create();
    const stopWatching = (): void => {
      void watcher?.cancel().catch(() => undefined);
      watcher = undefined;
    };
    // etcd deletes the key when the lease is revoked or expires: that is the lost signal.
    watcher.on('delete', () => {
      stopWatching();
      if (!released) loss.report('revoked');
    });
    const notHolder = (): LockException =>
      new LockException(LockErrorCode.NOT_HOLDER, `"${key}" is not held by this lease`, { key });
    return {
      key,
      fence,
      takenAt,
      extend: async () => {
        // A keepalive renews the TTL granted at acquire time (etcd cannot change a lease's TTL).
        try {
          await lease.keepaliveOnce();
        } catch (error) {
          if (lease.revoked()) throw notHolder();
          throw unavailable('extend', error);
        }
        const current = await this.client.get(name).string();
        if (current !== holder) throw notHolder();
      },
      release: async () => {
        // Set first so the watch does not report our own delete as a loss.
        released = true;
        let deleted: boolean;
        try {
          const txn = await this.client
            .if(name, 'Value', '==', holder)
            .then(this.client.delete().key(name))
            .commit();
          deleted = txn.succeeded;
        } catch (error) {
          // Maybe still ours: keep watching, keep the lease, let a retry try again.
          released = false;
          throw unavailable('release', error);
        }
        stopWatching();
        await lease.revoke().catch(() => undefined);
        if (!deleted) throw notHolder();
      },
      setLostHandler: (handler) => loss.setHandler(handler),
    };
  }
}

function unavailable(operation: string, error: unknown): LockException {
  if (error instanceof LockException) return error;
  return new LockException(
    LockErrorCode.BACKEND_UNAVAILABLE,
    `etcd lock ${operation} failed: ${(error as Error).message}`,
    undefined,
    { cause: error },
  );
}
