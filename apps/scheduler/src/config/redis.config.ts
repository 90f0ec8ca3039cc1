import { RedisQueueConnection } from './queue.config';
import { Env, SchedulerConfigError, int } from './env-values';

/** Where every Redis client of the scheduler connects, with the bound of one command. */
export type RedisConnection = RedisQueueConnection & { db: number; commandTimeoutMs: number };

/**
 * The BATON_REDIS_* server, or the Redis Cluster of BATON_REDIS_CLUSTER_NODES instead: every
 * client of the scheduler (queue, rate and fair-share counts, the Redis lock, the log streams)
 * opens the one or the other.
 */
export function redisConnection(env: Env): RedisConnection {
  const cluster = clusterNodes(env);
  const db = int(env, 'BATON_REDIS_DB', 0, 0, 15);
  const commandTimeoutMs = int(env, 'BATON_REDIS_COMMAND_TIMEOUT_MS', 2000, 100, 600_000);
  if (!cluster) {
    return {
      host: env.BATON_REDIS_HOST ?? '127.0.0.1',
      port: int(env, 'BATON_REDIS_PORT', 6379, 1, 65535),
      db,
      commandTimeoutMs,
    };
  }
  if (db !== 0) {
    throw new SchedulerConfigError(
      'BATON_REDIS_DB must be 0 with BATON_REDIS_CLUSTER_NODES: a Redis Cluster has database 0 only',
    );
  }
  // host and port name the cluster where one address is shown (its first node); the client
  // reaches it through every node listed.
  return { host: cluster[0].host, port: cluster[0].port, db, commandTimeoutMs, cluster };
}

/**
 * `BATON_REDIS_CLUSTER_NODES=10.0.0.1:7000,10.0.0.2:7000`: nodes of a Redis Cluster (an IPv6
 * address in brackets, `[::1]:7000`). One is enough to find the others; several keep a start
 * possible while one of them is down.
 */
function clusterNodes(env: Env): { host: string; port: number }[] | undefined {
  const parts = (env.BATON_REDIS_CLUSTER_NODES ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  if (parts.length === 0) return undefined;
  return parts.map((part) => {
    const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]]+)):(\d{1,5})$/.exec(part);
    const port = m ? Number(m[3]) : 0;
    if (!m || port < 1 || port > 65535) {
      throw new SchedulerConfigError(
        `BATON_REDIS_CLUSTER_NODES: ${JSON.stringify(part)} is not host:port`,
      );
    }
    return { host: m[1] ?? m[2], port };
  });
}
