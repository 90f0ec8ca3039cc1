import Redis, { Cluster, ClusterOptions, Command, RedisOptions } from 'ioredis';
import { Clock, STALL_SLACK_MS, Timer, systemClock } from '@baton/time';

/** One node of a Redis Cluster, as a client first looks for the cluster. */
export interface RedisClusterNode {
  host: string;
  port: number;
}

/** Where a Redis client connects, and how long one command may wait. */
export interface BoundedRedisNode {
  host: string;
  port?: number;
  db?: number;
  password?: string;
  /** A command not answered within this fails; default 2000 ms. */
  commandTimeoutMs?: number;
  /**
   * A Redis Cluster instead of the one server at `host` and `port`: a few of its nodes, from
   * which the client learns the others and which slots each serves. `db` is not used (a Cluster
   * has database 0 only).
   */
  cluster?: readonly RedisClusterNode[];
}

/** The bounds of every connection to a server, a Cluster's nodes' too. */
const NODE_BOUNDS = {
  maxRetriesPerRequest: 1,
  connectTimeout: 2000,
  disconnectTimeout: 200,
  keepAlive: 10_000,
  // Reconnect attempts every 50 ms more, up to half a second apart (ioredis' own cap is 2 s): a
  // client that tried through a long outage is back within about that long once Redis answers.
  retryStrategy: (times: number) => Math.min(times * 50, 500),
} satisfies RedisOptions;

/** What a caller may add to or override of the bounds; `subscriber`: one that waits for messages. */
export type BoundedRedisOptions = RedisOptions & { subscriber?: boolean; clock?: Clock };

/**
 * A Redis client whose every wait has a bound, as every Baton client of Redis needs: connecting
 * (2 s), each command (`commandTimeoutMs`, unless it is a standalone subscriber, which waits for
 * messages for as long as it lives), keep-alive probes that find a silently dead socket, one retry per
 * call instead of waiting out an outage, and a quick teardown on close (a refused socket never
 * closes by itself). Failures surface as rejected calls: the 'error' events (one per reconnect
 * attempt) are listened to. `options` adds to or overrides these.
 *
 * With `node.cluster` it is an ioredis `Cluster` with the same bounds (see boundedCluster).
 */
export function boundedRedis(
  node: BoundedRedisNode & { cluster?: undefined },
  options?: BoundedRedisOptions,
): Redis;
export function boundedRedis(
  node: BoundedRedisNode,
  options?: BoundedRedisOptions,
): Redis | Cluster;
export function boundedRedis(
  node: BoundedRedisNode,
  options: BoundedRedisOptions = {},
): Redis | Cluster {
  const { subscriber = false, clock = systemClock, ...rest } = options;
  let client: Redis | Cluster;
  if (node.cluster && node.cluster.length > 0) {
    client = boundedCluster(node.cluster, node.password, rest);
  } else {
    client = new Redis({
      host: node.host,
      port: node.port ?? 6379,
      db: node.db,
      password: node.password,
      ...NODE_BOUNDS,
      ...rest,
    });
    client.on('error', () => undefined);
  }
  // A subscriber waits for messages for as long as it lives, but its own calls (SUBSCRIBE) are
  // answered at once: a standalone one fails them after one reconnect attempt, while a Cluster
  // has no such limit (it queues calls for as long as no node answers), so they get the bound.
  if (subscriber && !(client instanceof Cluster)) return client;
  return reconnectOnTimeout(client, node.commandTimeoutMs ?? 2000, clock);
}

/**
 * A Cluster client. Each node's connection has the bounds of a standalone one. The client-wide
 * options a caller gives (connect lazily, queue while disconnected) apply to the Cluster, which
 * connects its nodes itself. Every call goes to the master of its slot (`scaleReads`): a
 * replica's copy lags, and the scripts read what they then write. A call that finds its node gone
 * is tried again as the client learns the new layout (a replica took over), within the same
 * bound as any command; a command past its bound reconnects the whole client
 * (reconnectOnTimeout), as it would a standalone one.
 */
function boundedCluster(
  nodes: readonly RedisClusterNode[],
  password: string | undefined,
  options: RedisOptions,
): Cluster {
  const { lazyConnect, enableOfflineQueue, ...nodeOptions } = options;
  const clusterOptions: ClusterOptions = {
    scaleReads: 'master',
    redisOptions: { password, ...NODE_BOUNDS, ...nodeOptions },
  };
  if (lazyConnect !== undefined) clusterOptions.lazyConnect = lazyConnect;
  if (enableOfflineQueue !== undefined) clusterOptions.enableOfflineQueue = enableOfflineQueue;
  const client = new Cluster(
    nodes.map((n) => ({ host: n.host, port: n.port })),
    clusterOptions,
  );
  // The Cluster reports a node it cannot reach apart from its own failures.
  client.on('error', () => undefined);
  client.on('node error', () => undefined);
  return client;
}

/** The message of a command past its bound, as ioredis' own `commandTimeout` words it. */
export const COMMAND_TIMED_OUT = 'Command timed out';

/**
 * Bounds every command of a client to `timeoutMs` and starts a new connection when one goes past
 * it. Redis answers in order: a reply that never came (a partition that lost the command) would
 * leave every later command of the connection waiting, or matched with a reply that is not its
 * own; a fresh connection has no such debt. Commands under way on the old one fail (and are
 * retried by their callers), new ones wait for the new one.
 *
 * The bound is this module's, not ioredis' `commandTimeout` (a bare timer per command): when the
 * process itself was starved or frozen past the bound (a loaded box, a long pause), such a timer
 * runs before the replies that arrived meanwhile are read, and every command under way would
 * fail and cost the connection although Redis had answered. Here one sweep checks the commands
 * under way; a sweep that runs late reads first (the next one judges), so only a command that
 * stayed unanswered while the process ran fails.
 */
export function reconnectOnTimeout<T extends Redis | Cluster>(
  client: T,
  timeoutMs: number,
  clock: Clock = systemClock,
): T {
  const sweeper = new CommandSweeper(timeoutMs, clock, () => {
    if (client.status === 'ready') client.disconnect(true);
  });
  const send = client.sendCommand.bind(client) as Redis['sendCommand'];
  (client as Redis).sendCommand = ((...args: Parameters<Redis['sendCommand']>) => {
    const result = send(...args);
    sweeper.track(args[0]);
    return result;
  }) as Redis['sendCommand'];
  client.once('end', () => sweeper.stop());
  return client;
}

/** The commands under way of one client, and the sweep that fails those past their bound. */
class CommandSweeper {
  private readonly underWay = new Map<Command, number>();
  private readonly periodMs: number;
  private timer: Timer | undefined;
  private due = 0;

  constructor(
    private readonly timeoutMs: number,
    private readonly clock: Clock,
    private readonly timedOut: () => void,
  ) {
    this.periodMs = Math.max(10, Math.min(250, Math.floor(timeoutMs / 4)));
  }

  track(command: Command): void {
    if (command.isResolved) return;
    this.underWay.set(command, this.clock.monotonic());
    const done = (): void => void this.underWay.delete(command);
    command.promise.then(done, done);
    if (!this.timer) this.arm();
  }

  stop(): void {
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(): void {
    this.due = this.clock.monotonic() + this.periodMs;
    this.timer = this.clock.setTimeout(() => this.sweep(), this.periodMs).unref();
  }

  private sweep(): void {
    this.timer = undefined;
    const now = this.clock.monotonic();
    // Late: the process did not run meanwhile. Replies may wait unread: the next sweep judges.
    if (now - this.due <= STALL_SLACK_MS) {
      let failed = false;
      for (const [command, sentAt] of this.underWay) {
        if (now - sentAt < this.timeoutMs) continue;
        this.underWay.delete(command);
        if (command.isResolved) continue;
        command.reject(new Error(COMMAND_TIMED_OUT));
        failed = true;
      }
      if (failed) this.timedOut();
    }
    if (this.underWay.size > 0) this.arm();
  }
}
