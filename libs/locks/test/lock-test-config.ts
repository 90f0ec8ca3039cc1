import { LockConfig, LockDriverName } from '@baton/locks';

/** A driver on its server, or the Redis driver on the machine's Redis Cluster. */
export type LockCase = LockDriverName | 'redis-cluster';

/** The driver a case runs. */
export function driverOf(name: LockCase): LockDriverName {
  return name === 'redis-cluster' ? 'redis' : name;
}

/** The nodes of the machine's Redis Cluster (scripts/services.sh): 3 masters, 3 replicas. */
export function redisClusterNodes(): { host: string; port: number }[] {
  return (
    process.env.REDIS_CLUSTER_NODES?.split(',') ??
    [7000, 7001, 7002, 7003, 7004, 7005].map((port) => `127.0.0.1:${port}`)
  ).map((node) => {
    const [host, port] = node.split(':');
    return { host, port: Number(port) };
  });
}

/**
 * Lock configurations of the conformance suite: the machine's real servers (scripts/services.sh
 * brings them up). Hosts may be overridden through the environment; the lib itself never reads it.
 */
export function testLockConfig(driver: LockCase): LockConfig {
  const env = process.env;
  switch (driver) {
    case 'local':
      return { driver, local: { maxPollMs: 100 } };
    case 'mysql':
      return {
        driver,
        mysql: {
          host: env.MYSQL_HOST ?? '127.0.0.1',
          port: Number(env.MYSQL_PORT ?? 3306),
          user: env.MYSQL_USER ?? 'root',
          password: env.MYSQL_PASSWORD ?? '',
          database: env.MYSQL_DATABASE ?? 'test',
          maxPollMs: 100,
        },
      };
    case 'redis':
      return {
        driver,
        redis: {
          nodes: [{ host: env.REDIS_HOST ?? '127.0.0.1', port: Number(env.REDIS_PORT ?? 6379) }],
          maxPollMs: 100,
        },
      };
    case 'redis-cluster': {
      // The whole Cluster is one member of the quorum, as BATON_REDIS_CLUSTER_NODES makes it.
      const cluster = redisClusterNodes();
      return { driver: 'redis', redis: { nodes: [{ ...cluster[0], cluster }], maxPollMs: 100 } };
    }
    case 'zookeeper':
      return {
        driver,
        zookeeper: {
          connectionString: env.ZOOKEEPER_HOSTS ?? '127.0.0.1:2181',
          // The server (tickTime 500) accepts sessions down to 1 s; 2 s keeps paused-holder tests short.
          sessionTimeoutMs: 2000,
          connectTimeoutMs: 5000,
        },
      };
    case 'etcd':
      return { driver, etcd: { hosts: [env.ETCD_HOST ?? 'http://127.0.0.1:2379'] } };
  }
}

/** Human names of the servers, for "X is not reachable" messages. */
export const SERVER_OF: Record<LockCase, string> = {
  local: 'nothing (in-process)',
  mysql: 'MariaDB/MySQL at 127.0.0.1:3306',
  redis: 'Redis at 127.0.0.1:6379',
  'redis-cluster': 'the Redis Cluster at 127.0.0.1:7000-7005',
  zookeeper: 'ZooKeeper at 127.0.0.1:2181',
  etcd: 'etcd at 127.0.0.1:2379',
};
