export * from './lock-provider.interface';
export * from './lock-config.interface';
export * from './lock.exception';
export * from './lock-provider.factory';
export * from './fence-guard';
export * from './locks.module';
// The driver classes are built by createLockProvider (loaded on demand); import one directly from
// './drivers/<name>.lock.driver' to use it alone.
export {
  BoundedRedisNode,
  BoundedRedisOptions,
  RedisClusterNode,
  boundedRedis,
  reconnectOnTimeout,
} from './drivers/redis-timeouts';
