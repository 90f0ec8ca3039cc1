import { LockConfig, LockDriverName } from '@baton/locks';

/**
 * Lock configurations of the conformance suite: the machine's real servers (scripts/services.sh
 * brings them up). Hosts may be overridden through the environment; the lib itself never reads it.
 */
export function testLockConfig(driver: LockDriverName): LockConfig {
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
export const SERVER_OF: Record<LockDriverName, string> = {
  local: 'nothing (in-process)',
  mysql: 'MariaDB/MySQL at 127.0.0.1:3306',
  redis: 'Redis at 127.0.0.1:6379',
  zookeeper: 'ZooKeeper at 127.0.0.1:2181',
  etcd: 'etcd at 127.0.0.1:2379',
};
