import { Clock, systemClock } from '@baton/time';
import { MemoryQueueDriver } from './drivers/memory.queue.driver';
import { RedisFairShare } from './drivers/redis.fair-share.driver';
import { RedisQueueDriver } from './drivers/redis.queue.driver';
import { FairShare, MemoryFairShare } from './fair-share';
import { DEFAULT_QUEUE_PREFIX, QueueConfig, QueueDriverName } from '../config';
import { QueueDriver } from './queue.driver';
import { QueueErrorCode, QueueException } from './queue.exception';

type Builders = {
  [K in QueueDriverName]: (
    config: Extract<QueueConfig, { driver: K }>,
    clock: Clock,
  ) => QueueDriver;
};

/** Every driver name, with how to build it; a new name in QueueDriverName is a compile error here. */
const DRIVERS = {
  memory: (_config, clock) => new MemoryQueueDriver(clock),
  redis: (config, clock) => {
    if (!config.redis) {
      throw new QueueException(
        QueueErrorCode.INVALID_CONFIG,
        'queue driver "redis" is chosen but its "redis" settings are missing',
        { driver: 'redis' },
      );
    }
    return new RedisQueueDriver({
      redis: config.redis,
      prefix: config.prefix ?? DEFAULT_QUEUE_PREFIX,
      shards: config.shards,
      clock,
    });
  },
} satisfies Builders;

/** The driver names the factory accepts. */
export const QUEUE_DRIVER_NAMES = Object.keys(DRIVERS) as QueueDriverName[];

/**
 * Builds the configured QueueDriver. Fails fast (a QueueException) on an unknown driver name,
 * which a config read from the environment can carry despite the type.
 */
export function createQueueDriver(config: QueueConfig, clock: Clock = systemClock): QueueDriver {
  const name = config.driver as string;
  if (!Object.hasOwn(DRIVERS, name)) {
    throw new QueueException(
      QueueErrorCode.UNKNOWN_DRIVER,
      `unknown queue driver "${name}"; expected one of ${QUEUE_DRIVER_NAMES.join(', ')}`,
      { driver: name },
    );
  }
  // The name was checked above; the union of builders cannot be narrowed by it for TypeScript.
  const build = DRIVERS[config.driver] as (config: QueueConfig, clock: Clock) => QueueDriver;
  return build(config, clock);
}

/** The tenants' fair share beside the queue: in Redis with the Redis queue, else in this process. */
export function createFairShare(
  queue: QueueConfig,
  minShare: number,
  clock: Clock = systemClock,
): FairShare {
  return queue.driver === 'redis'
    ? new RedisFairShare(queue.redis, queue.prefix ?? DEFAULT_QUEUE_PREFIX, minShare, clock)
    : new MemoryFairShare(minShare, () => clock.now());
}
