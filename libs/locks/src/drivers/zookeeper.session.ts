import { Clock, systemClock, Timer } from '@baton/time';
import * as zk from 'node-zookeeper-client';
import { LockErrorCode, LockException } from '../lock.exception';
import { LeaseLostReason } from '../lock-provider.interface';

/** node-zookeeper-client's callback shape. */
type ZkCallback<T> = (error: Error | zk.Exception | null, value: T) => void;

export interface ZookeeperSessionOptions {
  connectionString: string;
  /** The session timeout asked for; the server may negotiate another. */
  sessionTimeoutMs: number;
  /** How long to wait for the connection. */
  connectTimeoutMs: number;
  /** Deadline of each call. */
  callTimeoutMs: number;
  /** A path the heartbeat reads (it need not exist). */
  heartbeatPath: string;
  /** Times the connect, every call, the heartbeat and the watchdog. Defaults to the real clock. */
  clock?: Clock;
}

/** Hears that a session is, or may soon be, gone; it may hear it more than once. */
export type SessionLostHandler = (session: ZookeeperSession, reason: LeaseLostReason) => void;

/**
 * One ZooKeeper session and what the holder knows about its liveness. node-zookeeper-client has
 * no read timeout and pings only when idle, so a silent partition shows no `disconnected` for
 * minutes: the session heartbeats itself, times out every call, and reports itself lost when it
 * has not heard from the server for two thirds of the session timeout — or on any disconnect
 * (Curator's "suspended is lost").
 */
export class ZookeeperSession {
  /** Waiters for a predecessor's deletion, woken when the session is dropped. */
  readonly wakers = new Set<() => void>();
  /** When (holder's clock) the last request that the server answered was sent (a conservative liveness bound). */
  private lastReply: number;
  private heartbeat: Timer | undefined;
  private watchdog: Timer | undefined;

  private constructor(
    readonly client: zk.Client,
    /** The negotiated session timeout: the server drops our ephemerals this long after it last heard from us. */
    readonly timeoutMs: number,
    private readonly options: ZookeeperSessionOptions,
    private readonly onLost: SessionLostHandler,
    private readonly clock: Clock,
  ) {
    this.lastReply = clock.now();
  }

  /** Connects, and starts the liveness checks once connected. */
  static open(
    options: ZookeeperSessionOptions,
    onLost: SessionLostHandler,
  ): Promise<ZookeeperSession> {
    const clock = options.clock ?? systemClock;
    return new Promise<ZookeeperSession>((resolve, reject) => {
      const client = zk.createClient(options.connectionString, {
        sessionTimeout: options.sessionTimeoutMs,
        spinDelay: 200,
        retries: 1,
      });
      const timer = clock.setTimeout(() => {
        terminate(client, clock);
        reject(
          new LockException(
            LockErrorCode.BACKEND_UNAVAILABLE,
            `ZooKeeper at ${options.connectionString} did not answer within ${options.connectTimeoutMs} ms`,
          ),
        );
      }, options.connectTimeoutMs);
      client.once('connected', () => {
        clock.clearTimeout(timer);
        const session = new ZookeeperSession(
          client,
          client.getSessionTimeout() || options.sessionTimeoutMs,
          options,
          onLost,
          clock,
        );
        // Any disconnect is "suspended": the server may expire us before we reconnect, and
        // the holder must not go on believing meanwhile.
        client.on('disconnected', () => onLost(session, session.silentReason()));
        client.on('expired', () => onLost(session, 'session_lost'));
        session.startLiveness();
        resolve(session);
      });
      client.connect();
    });
  }

  /** Until when the holder may trust the session: the server may drop it this long after it last heard from us. */
  validUntil(): number {
    return this.lastReply + this.suspectAfterMs();
  }

  /** Adapts node-zookeeper-client's callbacks with a deadline, and notes server replies. */
  call<T>(fn: (cb: ZkCallback<T>) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = this.clock.setTimeout(() => {
        reject(
          new LockException(
            LockErrorCode.BACKEND_UNAVAILABLE,
            `ZooKeeper call had no reply within ${this.options.callTimeoutMs} ms`,
          ),
        );
        this.onLost(this, this.silentReason());
      }, this.options.callTimeoutMs);
      timer.unref();
      // A reply proves the session was alive after the request left, not when the reply is read:
      // one that sat in the socket while this process was paused (a GC stop, SIGSTOP) must not
      // make a session the server already expired look fresh. So the send time is what counts.
      const sentAt = this.clock.now();
      fn((error, value) => {
        this.clock.clearTimeout(timer);
        if (!error || isServerAnswer(error)) this.lastReply = Math.max(this.lastReply, sentAt);
        if (error) reject(error);
        else resolve(value);
      });
    });
  }

  /** Stops the liveness checks and closes the client for good. */
  close(): void {
    this.clock.clearInterval(this.heartbeat);
    this.clock.clearTimeout(this.watchdog);
    terminate(this.client, this.clock);
  }

  /** How long the holder trusts the session after the last reply: the session timeout minus a third. */
  private suspectAfterMs(): number {
    return Math.floor((this.timeoutMs * 2) / 3);
  }

  /**
   * Why one of our znodes vanished: when we had not been heard for a whole session timeout, the
   * server expired the session (it deletes the session's ephemerals and may still deliver their
   * watches on the dying connection, ahead of our own watchdog); otherwise someone removed it.
   */
  deletionReason(): LeaseLostReason {
    return this.silentFor() >= this.timeoutMs ? 'session_lost' : 'revoked';
  }

  private silentFor(): number {
    return this.clock.now() - this.lastReply;
  }

  /** Past the whole session timeout without a reply, the server has certainly expired us. */
  silentReason(): LeaseLostReason {
    return this.silentFor() >= this.timeoutMs ? 'session_lost' : 'connection_lost';
  }

  /**
   * Our own heartbeat (a cheap `exists` every quarter session timeout), and a watchdog that
   * reports the session lost when no reply came for two thirds of it: the server hears from us
   * no later than we hear back, so we give up before it can expire us and hand our keys on.
   */
  private startLiveness(): void {
    const beat = Math.max(50, Math.floor(this.timeoutMs / 4));
    this.heartbeat = this.clock.setInterval(() => {
      void this.call((cb) => this.client.exists(this.options.heartbeatPath, cb)).catch(
        () => undefined,
      );
    }, beat);
    this.heartbeat.unref();
    const arm = (): void => {
      const due = this.lastReply + this.suspectAfterMs() - this.clock.now();
      this.watchdog = this.clock.setTimeout(
        () => {
          if (this.clock.now() - this.lastReply >= this.suspectAfterMs()) {
            this.onLost(this, this.silentReason());
          } else {
            arm();
          }
        },
        Math.max(0, due),
      );
      this.watchdog.unref();
    };
    arm();
  }
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

/**
 * Closes a client for good. node-zookeeper-client's close() only queues a closeSession: sent at
 * once on a live connection (the server then drops our ephemerals), never on a silent one, and
 * a client between connections reconnects forever (keeping the process alive). So: no more
 * reconnects, close, and drop the socket shortly after if the server did not close it.
 */
function terminate(client: zk.Client, clock: Clock): void {
  client.removeAllListeners();
  // Internals: the library exposes neither the reconnect loop nor the socket.
  const manager = (
    client as unknown as {
      connectionManager?: { connect: () => void; socket?: { destroy(): void } };
    }
  ).connectionManager;
  if (manager) manager.connect = () => undefined;
  client.close();
  clock.setTimeout(() => manager?.socket?.destroy(), 1000).unref();
}
