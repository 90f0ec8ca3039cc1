import { EtcdLockDriver } from './drivers/etcd.lock.driver';
import { LocalLockDriver } from './drivers/local.lock.driver';
import { MysqlLockDriver } from './drivers/mysql.lock.driver';
import { RedisLockDriver } from './drivers/redis.lock.driver';
import { ZookeeperLockDriver } from './drivers/zookeeper.lock.driver';
import { LockConfig } from './lock-config.interface';
import { LockErrorCode, LockException } from './lock.exception';
import { LockDriverName, LockProvider } from './lock-provider.interface';

/** Every driver name, with how to build it; `satisfies` makes a new name a compile error here. */
const DRIVERS = {
  local: (config) => new LocalLockDriver(config.local),
  mysql: (config) => new MysqlLockDriver(required(config, 'mysql')),
  redis: (config) => new RedisLockDriver(required(config, 'redis')),
  zookeeper: (config) => new ZookeeperLockDriver(required(config, 'zookeeper')),
  etcd: (config) => new EtcdLockDriver(required(config, 'etcd')),
} satisfies Record<LockDriverName, (config: LockConfig) => LockProvider>;

/** The driver names the factory accepts. */
export const LOCK_DRIVER_NAMES = Object.keys(DRIVERS) as LockDriverName[];

/**
 * Builds the configured LockProvider. Fails fast on an unknown driver name and on a missing
 * section for the chosen driver; the other drivers' sections are not required. Connections are
 * opened on first use.
 */
export function createLockProvider(config: LockConfig): LockProvider {
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
  return build(config);
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
