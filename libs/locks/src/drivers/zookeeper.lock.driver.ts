import { randomUUID } from 'node:crypto';
import * as zk from 'node-zookeeper-client';
import { BaseLockProvider } from '../base-lock.provider';
import { HeldKey } from '../held-key.interface';
import { ZookeeperLockConfig } from '../lock-config.interface';
import { LockErrorCode, LockException } from '../lock.exception';
import { LeaseLostReason } from '../lock-provider.interface';
import { LossLatch } from '../loss-latch';

type LostHandler = (reason: LeaseLostReason, error?: unknown) => void;

/** One ZooKeeper session and what the driver knows about its liveness. */
interface Session {
  readonly client: zk.Client;
  /** The negotiated session timeout: the server drops our ephemerals this long after it last heard from us. */
  readonly timeoutMs: number;
  /** When (holder's clock) the last request that the server answered was sent (a conservative liveness bound). */
  lastReply: number;
  heartbeat: NodeJS.Timeout | undefined;
  watchdog: NodeJS.Timeout | undefined;
  /** Waiters for a predecessor's deletion, woken when the session is dropped. */
  readonly wakers: Set<() => void>;
}

/**
 * The "lock with watch": every taker creates an ephemeral sequential znode under the key's
 * node; the lowest sequence holds, each waiter watches only its predecessor (no herd on
 * release). The fence is the znode's creation zxid, which ZooKeeper orders globally and
 * persists. ZooKeeper's known weakness is that a holder whose session expired (GC pause,
 * partition) keeps believing it holds. node-zookeeper-client has no read timeout and pings only
 * when idle, so a silent partition shows no `disconnected` for minutes: the driver heartbeats
 * itself, times out every call, and treats a connection it has not heard from for two thirds of
 * the session timeout — or any disconnect — as lost (Curator's "suspended is lost"). The fence
 * remains the real protection.
 */
export class ZookeeperLockDriver extends BaseLockProvider {
  readonly driver = 'zookeeper' as const;
  private readonly root: string;
  private readonly sessionTimeoutMs: number;
  private readonly connectTimeoutMs: number;
  private readonly callTimeoutMs: number;
  private session: Session | undefined;
  private connecting: Promise<Session> | undefined;
  /** Lost handlers of every znode currently held through the current session, by path. */
  private readonly held = new Map<string, LostHandler>();

  constructor(private readonly config: ZookeeperLockConfig) {
    super();
    this.root = (config.rootPath ?? '/baton/locks').replace(/\/+$/, '');
    this.sessionTimeoutMs = config.sessionTimeoutMs ?? 4000;
    this.connectTimeoutMs = config.connectTimeoutMs ?? 5000;
    this.callTimeoutMs = config.callTimeoutMs ?? this.sessionTimeoutMs;
  }

  async acquireKey(key: string, _ttlMs: number, deadline: number): Promise<HeldKey | null> {
    const session = await this.connected();
    const { client } = session;
    // encodeURIComponent also escapes '/', so any key is one path segment.
    const parent = `${this.root}/${encodeURIComponent(key)}`;
    // Curator's "protected" node: if the reply to the create is lost, the id in the name is
    // how we find (and remove) the node the server did create, instead of leaving an orphan
    // that blocks every taker for as long as the session lives.
    const prefix = `lease-${randomUUID()}-`;
    const create = (): Promise<string> =>
      this.call<string>(session, (cb) =>
        client.create(`${parent}/${prefix}`, EMPTY, zk.CreateMode.EPHEMERAL_SEQUENTIAL, cb),
      );
    let path: string;
    try {
      // The parent usually exists: create the node first, and the parents only when missing
      // (mkdirp is one write per path segment, through the leader, even when all exist).
      path = await create().catch(async (error: unknown) => {
        if (!isZkCode(error, zk.Exception.NO_NODE)) throw error;
        await this.call(session, (cb) => client.mkdirp(parent, cb));
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
        const attemptAt = Date.now();
        const children = (
          await this.call<string[]>(session, (cb) => client.getChildren(parent, cb))
        )
          .filter((c) => c.startsWith('lease-'))
          .sort(bySequence);
        const index = children.indexOf(name);
        if (index === -1) {
          throw new LockException(LockErrorCode.LEASE_LOST, `znode ${path} vanished while waiting`);
        }
        if (index === 0) return await this.holdKey(session, key, path, attemptAt);
        if (Date.now() >= deadline) {
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

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.held.clear();
    const session = this.session ?? (await this.connecting?.catch(() => undefined));
    this.session = undefined;
    if (session) this.shutdown(session);
  }

  /** Watches the predecessor only: wakes on its deletion, on deadline, on session loss, or at once if it is gone. */
  private waitForDeletion(session: Session, path: string, deadline: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        session.wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, deadline - Date.now()));
      timer.unref();
      session.wakers.add(done);
      this.call<zk.Stat | null>(session, (cb) => session.client.exists(path, done, cb)).then(
        (stat) => (stat ? undefined : done()),
        done,
      );
    });
  }

  private async holdKey(
    session: Session,
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
      this.call<zk.Stat | null>(session, (cb) =>
        client.exists(
          path,
          (event) => {
            if (event.getType() === zk.Event.NODE_DELETED) lost('revoked');
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
        await this.call<void>(session, (cb) => client.remove(path, -1, cb));
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
          current = await this.call<zk.Stat | null>(session, (cb) => client.exists(path, cb));
        } catch (error) {
          throw unavailable('extend', error);
        }
        if (!current || this.session !== session) throw notHolder();
      },
      release: remove,
      // The holder's TTL passed: free the key for others instead of holding it for the session.
      expire: () => remove().catch(() => undefined),
      // The server may drop the session this long after it last heard from us, whatever the TTL.
      validUntil: () => session.lastReply + this.suspectAfterMs(session),
      setLostHandler: (handler) => loss.setHandler(handler),
    };
  }

  private connected(): Promise<Session> {
    if (this.closed)
      return Promise.reject(
        new LockException(LockErrorCode.CLOSED, 'zookeeper provider is closed'),
      );
    if (this.session) return Promise.resolve(this.session);
    this.connecting ??= new Promise<Session>((resolve, reject) => {
      const client = zk.createClient(this.config.connectionString, {
        sessionTimeout: this.sessionTimeoutMs,
        spinDelay: 200,
        retries: 1,
      });
      const timer = setTimeout(() => {
        terminate(client);
        reject(
          new LockException(
            LockErrorCode.BACKEND_UNAVAILABLE,
            `ZooKeeper at ${this.config.connectionString} did not answer within ${this.connectTimeoutMs} ms`,
          ),
        );
      }, this.connectTimeoutMs);
      client.once('connected', () => {
        clearTimeout(timer);
        const session: Session = {
          client,
          timeoutMs: client.getSessionTimeout() || this.sessionTimeoutMs,
          lastReply: Date.now(),
          heartbeat: undefined,
          watchdog: undefined,
          wakers: new Set(),
        };
        // Any disconnect is "suspended": the server may expire us before we reconnect, and
        // the holder must not go on believing meanwhile.
        client.on('disconnected', () => this.dropSession(session, this.silentReason(session)));
        client.on('expired', () => this.dropSession(session, 'session_lost'));
        this.startLiveness(session);
        if (this.closed) {
          this.shutdown(session);
          reject(new LockException(LockErrorCode.CLOSED, 'zookeeper provider is closed'));
          return;
        }
        this.session = session;
        resolve(session);
      });
      client.connect();
    }).finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  /** How long the holder trusts the session after the last reply: the session timeout minus a third. */
  private suspectAfterMs(session: Session): number {
    return Math.floor((session.timeoutMs * 2) / 3);
  }

  /** Past the whole session timeout without a reply, the server has certainly expired us. */
  private silentReason(session: Session): LeaseLostReason {
    return Date.now() - session.lastReply >= session.timeoutMs ? 'session_lost' : 'connection_lost';
  }

  /**
   * Our own heartbeat (a cheap `exists` every quarter session timeout), and a watchdog that
   * drops the session when no reply came for two thirds of it: the server hears from us no
   * later than we hear back, so we give up before it can expire us and hand our keys on.
   */
  private startLiveness(session: Session): void {
    const beat = Math.max(50, Math.floor(session.timeoutMs / 4));
    session.heartbeat = setInterval(() => {
      void this.call(session, (cb) => session.client.exists(this.root, cb)).catch(() => undefined);
    }, beat);
    session.heartbeat.unref();
    const arm = (): void => {
      const due = session.lastReply + this.suspectAfterMs(session) - Date.now();
      session.watchdog = setTimeout(
        () => {
          if (Date.now() - session.lastReply >= this.suspectAfterMs(session)) {
            this.dropSession(session, this.silentReason(session));
          } else {
            arm();
          }
        },
        Math.max(0, due),
      );
      session.watchdog.unref();
    };
    arm();
  }

  /** Every znode of the session is (or may soon be) gone: report all holders lost, wake waiters, start a new session next time. */
  private dropSession(session: Session, reason: LeaseLostReason): void {
    if (this.session !== session) return;
    this.session = undefined;
    const handlers = [...this.held.values()];
    this.held.clear();
    for (const handler of handlers) handler(reason);
    for (const wake of [...session.wakers]) wake();
    this.shutdown(session);
  }

  private shutdown(session: Session): void {
    clearInterval(session.heartbeat);
    clearTimeout(session.watchdog);
    terminate(session.client);
  }

  /** Adapts node-zookeeper-client's callbacks with a deadline, and notes server replies. */
  private call<T>(
    session: Session,
    fn: (cb: (error: Error | zk.Exception | null, value: T) => void) => void,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(
          new LockException(
            LockErrorCode.BACKEND_UNAVAILABLE,
            `ZooKeeper call had no reply within ${this.callTimeoutMs} ms`,
          ),
        );
        this.dropSession(session, this.silentReason(session));
      }, this.callTimeoutMs);
      timer.unref();
      // A reply proves the session was alive after the request left, not when the reply is read:
      // one that sat in the socket while this process was paused (a GC stop, SIGSTOP) must not
      // make a session the server already expired look fresh. So the send time is what counts.
      const sentAt = Date.now();
      fn((error, value) => {
        clearTimeout(timer);
        if (!error || isServerAnswer(error))
          session.lastReply = Math.max(session.lastReply, sentAt);
        if (error) reject(error);
        else resolve(value);
      });
    });
  }

  /** Removes a znode of ours through whatever session is current; best effort. */
  private async removeQuietly(path: string): Promise<void> {
    try {
      const session = await this.connected();
      await this.call<void>(session, (cb) => session.client.remove(path, -1, cb));
    } catch {
      // Gone already, or unreachable: an ephemeral dies with its session anyway.
    }
  }

  /** After a failed create: finds the node created under our id (if the server did) and removes it. */
  private async removeOurs(parent: string, prefix: string): Promise<void> {
    try {
      const session = await this.connected();
      const children = await this.call<string[]>(session, (cb) =>
        session.client.getChildren(parent, cb),
      );
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

/** Errors that came from the server (so the connection is alive), not from the client library. */
function isServerAnswer(error: unknown): boolean {
  return (
    error instanceof zk.Exception &&
    [zk.Exception.NO_NODE, zk.Exception.NODE_EXISTS, zk.Exception.NOT_EMPTY].includes(
      error.getCode(),
    )
  );
}

function isZkCode(error: unknown, code: number): boolean {
  return error instanceof zk.Exception && error.getCode() === code;
}

/**
 * Closes a client for good. node-zookeeper-client's close() only queues a closeSession: sent at
 * once on a live connection (the server then drops our ephemerals), never on a silent one, and
 * a client between connections reconnects forever (keeping the process alive). So: no more
 * reconnects, close, and drop the socket shortly after if the server did not close it.
 */
function terminate(client: zk.Client): void {
  client.removeAllListeners();
  // Internals: the library exposes neither the reconnect loop nor the socket.
  const manager = (
    client as unknown as {
      connectionManager?: { connect: () => void; socket?: { destroy(): void } };
    }
  ).connectionManager;
  if (manager) manager.connect = () => undefined;
  client.close();
  setTimeout(() => manager?.socket?.destroy(), 1000).unref();
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
