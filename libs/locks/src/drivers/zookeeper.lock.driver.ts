import { randomUUID } from 'node:crypto';
import { Clock, systemClock } from '@baton/time';
import * as zk from 'node-zookeeper-client';
import { BaseLockProvider } from '../base-lock.provider';
import { HeldKey } from '../held-key.interface';
import { ZookeeperLockConfig } from '../lock-config.interface';
import { LockErrorCode, LockException } from '../lock.exception';
import { LeaseLostReason, LockState } from '../lock-provider.interface';
import { freeState } from '../lock-state';
import { LossLatch } from '../loss-latch';
import { ZookeeperSession, ZookeeperSessionOptions } from './zookeeper.session';

type LostHandler = (reason: LeaseLostReason, error?: unknown) => void;

/**
 * The "lock with watch": every taker creates an ephemeral sequential znode under the key's
 * node; the lowest sequence holds, each waiter watches only its predecessor (no herd on
 * release). The fence is the znode's creation zxid, which ZooKeeper orders globally and
 * persists. ZooKeeper's known weakness is that a holder whose session expired (GC pause,
 * partition) keeps believing it holds: every key held through a session is reported lost as soon
 * as the session suspects itself gone (see ZookeeperSession). The fence remains the real
 * protection. The holder's label is the znode's data; ZooKeeper keeps no expiry for it (the znode
 * lives as long as the session, and the driver removes it when the holder's TTL passes).
 */
export class ZookeeperLockDriver extends BaseLockProvider {
  readonly driver = 'zookeeper' as const;
  private readonly root: string;
  private readonly sessionOptions: ZookeeperSessionOptions;
  private session: ZookeeperSession | undefined;
  private connecting: Promise<ZookeeperSession> | undefined;
  /** Lost handlers of every znode currently held through the current session, by path. */
  private readonly held = new Map<string, LostHandler>();

  constructor(config: ZookeeperLockConfig, clock: Clock = systemClock) {
    super(clock);
    this.root = (config.rootPath ?? '/baton/locks').replace(/\/+$/, '');
    const sessionTimeoutMs = config.sessionTimeoutMs ?? 4000;
    this.sessionOptions = {
      connectionString: config.connectionString,
      sessionTimeoutMs,
      connectTimeoutMs: config.connectTimeoutMs ?? 5000,
      callTimeoutMs: config.callTimeoutMs ?? sessionTimeoutMs,
      heartbeatPath: this.root,
      clock,
    };
  }

  async acquireKey(
    key: string,
    _ttlMs: number,
    deadline: number,
    label?: string,
  ): Promise<HeldKey | null> {
    const session = await this.connected();
    const { client } = session;
    // encodeURIComponent also escapes '/', so any key is one path segment.
    const parent = `${this.root}/${encodeURIComponent(key)}`;
    // Curator's "protected" node: if the reply to the create is lost, the id in the name is
    // how we find (and remove) the node the server did create, instead of leaving an orphan
    // that blocks every taker for as long as the session lives.
    const prefix = `lease-${randomUUID()}-`;
    const create = (): Promise<string> =>
      session.call<string>((cb) =>
        client.create(
          `${parent}/${prefix}`,
          label === undefined ? EMPTY : Buffer.from(label, 'utf8'),
          zk.CreateMode.EPHEMERAL_SEQUENTIAL,
          cb,
        ),
      );
    let path: string;
    try {
      // The parent usually exists: create the node first, and the parents only when missing
      // (mkdirp is one write per path segment, through the leader, even when all exist).
      path = await create().catch(async (error: unknown) => {
        if (!isZkCode(error, zk.Exception.NO_NODE)) throw error;
        await session.call((cb) => client.mkdirp(parent, cb));
        return create();
      });
    } catch (error) {
      await this.removeOurs(parent, prefix);
      throw unavailable('acquire', error);
    }
    const name = path.slice(parent.length + 1);
    try {
      for (;;) {
        if (this.closed)
          throw new LockException(LockErrorCode.CLOSED, 'zookeeper provider is closed');
        if (this.session !== session) {
          throw new LockException(
            LockErrorCode.BACKEND_UNAVAILABLE,
            `ZooKeeper session lost while waiting for "${key}"`,
          );
        }
        const attemptAt = this.clock.now();
        const children = (await session.call<string[]>((cb) => client.getChildren(parent, cb)))
          .filter((c) => c.startsWith('lease-'))
          .sort(bySequence);
        const index = children.indexOf(name);
        if (index === -1) {
          throw new LockException(LockErrorCode.LEASE_LOST, `znode ${path} vanished while waiting`);
        }
        if (index === 0) return await this.holdKey(session, key, path, attemptAt);
        if (this.clock.now() >= deadline) {
          await this.removeQuietly(path);
          return null;
        }
        await this.waitForDeletion(session, `${parent}/${children[index - 1]}`, deadline);
      }
    } catch (error) {
      await this.removeQuietly(path);
      throw unavailable('acquire', error);
    }
  }

  /**
   * The lowest znode under the key is its holder (the recipe's rule, whether or not its owner has
   * noticed yet); its data is the label, its creation zxid the fence, the id in its name the token.
   */
  async inspectKey(key: string): Promise<LockState> {
    const session = await this.connected();
    const { client } = session;
    const parent = `${this.root}/${encodeURIComponent(key)}`;
    try {
      // The lowest node may go between the listing and the read: list again.
      for (let attempt = 0; attempt < 5; attempt++) {
        let children: string[];
        try {
          children = await session.call<string[]>((cb) => client.getChildren(parent, cb));
        } catch (error) {
          if (isZkCode(error, zk.Exception.NO_NODE)) return freeState(key);
          throw error;
        }
        const lowest = children.filter((c) => c.startsWith('lease-')).sort(bySequence)[0];
        if (lowest === undefined) return freeState(key);
        try {
          const [data, stat] = await session.call<[Buffer, zk.Stat]>((cb) =>
            client.getData(`${parent}/${lowest}`, (error, d, st) => cb(error, [d, st])),
          );
          return {
            key,
            held: true,
            holder: data && data.length > 0 ? data.toString('utf8') : null,
            // lease-<uuid>-<10-digit sequence>
            token: lowest.slice('lease-'.length, -11),
            fence: zxidToNumber(stat.czxid),
            expiresAt: null,
          };
        } catch (error) {
          if (!isZkCode(error, zk.Exception.NO_NODE)) throw error;
        }
      }
    } catch (error) {
      throw unavailable('inspect', error);
    }
    throw new LockException(
      LockErrorCode.BACKEND_UNAVAILABLE,
      `ZooKeeper lock inspect of "${key}": the holder kept changing`,
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.held.clear();
    const session = this.session ?? (await this.connecting?.catch(() => undefined));
    this.session = undefined;
    if (session) session.close();
  }

  /** Watches the predecessor only: wakes on its deletion, on deadline, on session loss, or at once if it is gone. */
  private waitForDeletion(
    session: ZookeeperSession,
    path: string,
    deadline: number,
  ): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.clock.clearTimeout(timer);
        session.wakers.delete(done);
        resolve();
      };
      const timer = this.clock.setTimeout(done, Math.max(0, deadline - this.clock.now())).unref();
      session.wakers.add(done);
      session
        .call<zk.Stat | null>((cb) => session.client.exists(path, done, cb))
        .then((stat) => (stat ? undefined : done()), done);
    });
  }

  private async holdKey(
    session: ZookeeperSession,
    key: string,
    path: string,
    takenAt: number,
  ): Promise<HeldKey> {
    const { client } = session;
    let released = false;
    const loss = new LossLatch();
    const lost: LostHandler = (reason, error) => {
      this.held.delete(path);
      if (!released) loss.report(reason, error);
    };
    // The watch doubles as "someone removed my znode" detection.
    const watchOwn = (): Promise<zk.Stat | null> =>
      session.call<zk.Stat | null>((cb) =>
        client.exists(
          path,
          (event) => {
            if (event.getType() === zk.Event.NODE_DELETED) lost(session.deletionReason());
            else void watchOwn().catch(() => undefined);
          },
          cb,
        ),
      );
    const stat = await watchOwn();
    if (!stat) throw new LockException(LockErrorCode.LEASE_LOST, `znode ${path} vanished`);
    this.held.set(path, lost);
    const notHolder = (): LockException =>
      new LockException(LockErrorCode.NOT_HOLDER, `"${key}" is not held by this lease`, { key });
    const remove = async (): Promise<void> => {
      // Set first so the watch does not report our own delete as a loss.
      released = true;
      if (this.session !== session || loss.lost) throw notHolder();
      try {
        await session.call<void>((cb) => client.remove(path, -1, cb));
      } catch (error) {
        if (isZkCode(error, zk.Exception.NO_NODE) || this.session !== session) throw notHolder();
        // Maybe still ours: a retry may try again, the watch keeps reporting.
        released = false;
        throw unavailable('release', error);
      }
      this.held.delete(path);
    };
    return {
      key,
      fence: zxidToNumber(stat.czxid),
      takenAt,
      extend: async () => {
        // No per-key TTL in ZooKeeper: the znode lives while the session does. Extending
        // checks that it still exists in this session; the lease's clock does the rest.
        if (this.session !== session || loss.lost) throw notHolder();
        let current: zk.Stat | null;
        try {
          current = await session.call<zk.Stat | null>((cb) => client.exists(path, cb));
        } catch (error) {
          throw unavailable('extend', error);
        }
        if (!current || this.session !== session) throw notHolder();
      },
      release: remove,
      // The holder's TTL passed: free the key for others instead of holding it for the session.
      expire: () => remove().catch(() => undefined),
      // The server may drop the session this long after it last heard from us, whatever the TTL.
      validUntil: () => session.validUntil(),
      // Past that bound: `connection_lost`, or `session_lost` once the whole timeout went by.
      lapseReason: () => session.silentReason(),
      setLostHandler: (handler) => loss.setHandler(handler),
    };
  }

  private connected(): Promise<ZookeeperSession> {
    if (this.closed)
      return Promise.reject(
        new LockException(LockErrorCode.CLOSED, 'zookeeper provider is closed'),
      );
    if (this.session) return Promise.resolve(this.session);
    this.connecting ??= ZookeeperSession.open(this.sessionOptions, (session, reason) =>
      this.dropSession(session, reason),
    )
      .then((session) => {
        if (this.closed) {
          session.close();
          throw new LockException(LockErrorCode.CLOSED, 'zookeeper provider is closed');
        }
        this.session = session;
        return session;
      })
      .finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  /** Every znode of the session is (or may soon be) gone: report all holders lost, wake waiters, start a new session next time. */
  private dropSession(session: ZookeeperSession, reason: LeaseLostReason): void {
    if (this.session !== session) return;
    this.session = undefined;
    const handlers = [...this.held.values()];
    this.held.clear();
    for (const handler of handlers) handler(reason);
    for (const wake of [...session.wakers]) wake();
    session.close();
  }

  /** Removes a znode of ours through whatever session is current; best effort. */
  private async removeQuietly(path: string): Promise<void> {
    try {
      const session = await this.connected();
      await session.call<void>((cb) => session.client.remove(path, -1, cb));
    } catch {
      // Gone already, or unreachable: an ephemeral dies with its session anyway.
    }
  }

  /** After a failed create: finds the node created under our id (if the server did) and removes it. */
  private async removeOurs(parent: string, prefix: string): Promise<void> {
    try {
      const session = await this.connected();
      const children = await session.call<string[]>((cb) => session.client.getChildren(parent, cb));
      for (const child of children.filter((c) => c.startsWith(prefix))) {
        await this.removeQuietly(`${parent}/${child}`);
      }
    } catch {
      // Unreachable: the node dies with the old session (which dropSession already closed).
    }
  }
}

const EMPTY = Buffer.alloc(0);

/** Sequential znodes sort by their 10-digit sequence suffix, not by the id before it. */
function bySequence(a: string, b: string): number {
  const sa = a.slice(-10);
  const sb = b.slice(-10);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

function isZkCode(error: unknown, code: number): boolean {
  return error instanceof zk.Exception && error.getCode() === code;
}

/** zxids are 64-bit (epoch << 32 | counter); below 2^53 for any epoch a real ensemble reaches. */
function zxidToNumber(zxid: Buffer): number {
  return Number(zxid.readBigUInt64BE(0));
}

function unavailable(operation: string, error: unknown): LockException {
  if (error instanceof LockException) return error;
  return new LockException(
    LockErrorCode.BACKEND_UNAVAILABLE,
    `ZooKeeper lock ${operation} failed: ${(error as Error).message}`,
    undefined,
    { cause: error },
  );
}
