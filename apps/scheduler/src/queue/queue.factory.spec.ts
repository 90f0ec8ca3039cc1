import { describe, expect, it } from '@jest/globals';
import { MemoryQueueDriver } from './drivers/memory.queue.driver';
import { QueueConfig } from '../config';
import { QueueErrorCode } from './queue.exception';
import { createQueueDriver, QUEUE_DRIVER_NAMES } from './queue.factory';

describe('createQueueDriver', () => {
  it('knows the memory and redis drivers', () => {
    expect(QUEUE_DRIVER_NAMES).toEqual(['memory', 'redis']);
  });

  it('builds the memory driver', async () => {
    const driver = createQueueDriver({ driver: 'memory' });
    expect(driver).toBeInstanceOf(MemoryQueueDriver);
    await driver.close();
  });

  it('fails fast on an unknown driver name', () => {
    const config = { driver: 'rabbitmq' } as unknown as QueueConfig;
    expect(() => createQueueDriver(config)).toThrow(
      expect.objectContaining({ code: QueueErrorCode.UNKNOWN_DRIVER }),
    );
  });

  it('rejects a redis config without its settings, or with bad shards or prefix', () => {
    // All three fail before a connection is opened, so no Redis is needed here.
    const bad = [
      { driver: 'redis' },
      { driver: 'redis', redis: { host: '127.0.0.1', port: 6379 }, shards: 0 },
      { driver: 'redis', redis: { host: '127.0.0.1', port: 6379 }, prefix: '{x}' },
    ] as unknown as QueueConfig[];
    for (const config of bad) {
      expect(() => createQueueDriver(config)).toThrow(
        expect.objectContaining({ code: QueueErrorCode.INVALID_CONFIG }),
      );
    }
  });
});
