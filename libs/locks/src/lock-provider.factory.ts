import { Clock, systemClock } from '@baton/time';
import type * as Etcd from './drivers/etcd.lock.driver';
import type * as Local from './drivers/local.lock.driver';
import type * as Mysql from './drivers/mysql.lock.driver';
import type * as Redis from './drivers/redis.lock.driver';
import type * as Zookeeper from './drivers/zookeeper.lock.driver';
import { LockConfig } from './lock-config.interface';
import { LockErrorCode, LockException } from './lock.exception';
import { LockDriverName, LockProvider } from './lock-provider.interface';

/*
 * Every driver name, with how to build it; `satisfies` makes a new name a compile error here.
 * A driver's module (and its client library: gRPC for etcd, a ZooKeeper client...) is loaded only
 * when that driver is chosen, which keeps a process's start-up short.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
const DRIVERS = {
  local: (config, clock) =>
    new (require('./drivers/local.lock.driver') as typeof Local).LocalLockDriver(
      config.local,
      clock,
    ),
  mysql: (config, clock) =>
    new (require('./drivers/mysql.lock.driver') as typeof Mysql).MysqlLockDriver(
      required(config, 'mysql'),
      clock,
    ),
  redis: (config, clock) =>
    new (require('./drivers/redis.lock.driver') as typeof Redis).RedisLockDriver(
      required(config, 'redis'),
      clock,
    ),
  zookeeper: (config, clock) =>
    new (require('./drivers/zookeeper.lock.driver') as typeof Zookeeper).ZookeeperLockDriver(
      required(config, 'zookeeper'),
      clock,
    ),
  etcd: (config, clock) =>
    new (require('./drivers/etcd.lock.driver') as typeof Etcd).EtcdLockDriver(
      required(config, 'etcd'),
      clock,
    ),
} satisfies Record<LockDriverName, (config: LockConfig, clock: Clock) => LockProvider>;
/* eslint-enable @typescript-eslint/no-require-imports */

/** The driver names the factory accepts. */
export const LOCK_DRIVER_NAMES = Object.keys(DRIVERS) as LockDriverName[];

/**
 * Builds the configured LockProvider. Fails fast on an unknown driver name and on a missing
 * section for the chosen driver; the other drivers' sections are not required. Connections are
 * opened on first use. `clock` is the holder's time source (expiries, renewals, waits, the
 * driver's own timeouts): the real clock unless a test hands in a `ManualClock`.
 */
export function createLockProvider(config: LockConfig, clock: Clock = systemClock): LockProvider {
  const build = Object.hasOwn(DRIVERS, config.driver)
    ? DRIVERS[config.driver as LockDriverName]
    : undefined;
  if (!build) {
    throw new LockException(
      LockErrorCode.UNKNOWN_DRIVER,
      `unknown lock driver "${String(config.driver)}"; expected one of ${LOCK_DRIVER_NAMES.join(', ')}`,
      { driver: config.driver },
    );
  }
  return build(config, clock);
}

function required<K extends Exclude<LockDriverName, 'local'>>(
  config: LockConfig,
  driver: K,
): NonNullable<LockConfig[K]> {
  const section = config[driver];
  if (!section) {
    throw new LockException(
      LockErrorCode.INVALID_CONFIG,
      `lock driver "${driver}" is chosen but its "${driver}" settings are missing`,
      { driver },
    );
  }
  return section as NonNullable<LockConfig[K]>;
}
