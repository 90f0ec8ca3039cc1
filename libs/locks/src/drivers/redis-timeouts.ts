import Redis, { Cluster, RedisOptions } from 'ioredis';

/** Where a Redis client connects, and how long one command may wait. */
export interface BoundedRedisNode {
  host: string;
  port?: number;
  db?: number;
  password?: string;
  /** A command not answered within this fails; default 2000 ms. */
  commandTimeoutMs?: number;
}

/**
 * A Redis client whose every wait has a bound, as every Baton client of Redis needs: connecting
 * (2 s), each command (`commandTimeoutMs`, unless it is a subscriber, which waits for messages
 * for as long as it lives), keep-alive probes that find a silently dead socket, one retry per
 * call instead of waiting out an outage, and a quick teardown on close (a refused socket never
 * closes by itself). Failures surface as rejected calls: the 'error' events (one per reconnect
 * attempt) are listened to. `options` adds to or overrides these.
 */
export function boundedRedis(
  node: BoundedRedisNode,
  options: RedisOptions & { subscriber?: boolean } = {},
): Redis {
  const { subscriber = false, ...rest } = options;
  const client = new Redis({
    host: node.host,
    port: node.port ?? 6379,
    db: node.db,
    password: node.password,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    disconnectTimeout: 200,
    keepAlive: 10_000,
    ...(subscriber ? {} : { commandTimeout: node.commandTimeoutMs ?? 2000 }),
    ...rest,
  });
  client.on('error', () => undefined);
  return subscriber ? client : reconnectOnTimeout(client);
}

/**
 * Makes a client start a new connection when a command times out (`commandTimeout`). Redis
 * answers in order: a reply that never came (a partition that lost the command) would leave every
 * later command of the connection waiting, or matched with a reply that is not its own; a fresh
 * connection has no such debt. Commands under way on the old one fail (and are retried by their
 * callers), new ones wait for the new one.
 */
export function reconnectOnTimeout<T extends Redis | Cluster>(client: T): T {
  const send = client.sendCommand.bind(client) as Redis['sendCommand'];
  (client as Redis).sendCommand = ((...args: Parameters<Redis['sendCommand']>) => {
    const result = send(...args);
    args[0].promise.catch((err: unknown) => {
      if (err instanceof Error && err.message === 'Command timed out' && client.status === 'ready')
        client.disconnect(true);
    });
    return result;
  }) as Redis['sendCommand'];
  return client;
}
