import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { Clock } from '../common';
import { DEFAULT_QUEUE_PREFIX, SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { RedisRateStore } from './drivers/redis.rate-store.driver';
import { MemoryRateStore, RateLimit, RateStore } from './rate-store';

export type { RateLimit } from './rate-store';

/**
 * Start-rate limits per task type and per tenant (docs/architecture.md). With the Redis queue the
 * limits' state is in Redis, so three instances together hold a limit of 50/s to 50/s; with the
 * embedded queue it is in this process (one instance).
 */
@Injectable()
export class RateLimiter implements OnApplicationShutdown {
  private readonly store: RateStore;

  constructor(clock: Clock, @Inject(SCHEDULER_CONFIG) config: SchedulerConfig) {
    this.store =
      config.queue.driver === 'redis'
        ? new RedisRateStore(config.queue.redis, config.queue.prefix ?? DEFAULT_QUEUE_PREFIX)
        : new MemoryRateStore(clock);
  }

  /**
   * 0 when `holder` (a task) may start now under every limit; else how long until the slot
   * reserved for it, when it may.
   */
  take(holder: string, limits: readonly RateLimit[]): Promise<number> {
    if (limits.length === 0) return Promise.resolve(0);
    return this.store.take(holder, limits);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.store.close();
  }
}
