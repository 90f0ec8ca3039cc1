import { DynamicModule, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { Clock } from '@baton/time';
import { QueueConfig } from '../config';
import { EnqueueTracker } from './enqueue-tracker';
import { QueueLanes } from './queue-lanes';
import { QUEUE_DRIVER, QueueDriver } from './queue.driver';
import { createQueueDriver } from './queue.factory';

/**
 * The queue tasks wait in: the configured driver (memory or Redis) behind the two lanes (main and
 * retry). Other modules see only the lanes and the tracker of what this process enqueued.
 */
@Module({})
export class QueueModule implements OnApplicationShutdown {
  constructor(@Inject(QUEUE_DRIVER) private readonly queue: QueueDriver) {}

  /** `config` is the typed, already validated queue section of the scheduler's config. */
  static forRoot(config: QueueConfig): DynamicModule {
    return {
      module: QueueModule,
      // Dispatcher, Checker, runner, engine and the task API all use the one queue.
      global: true,
      providers: [
        {
          provide: QUEUE_DRIVER,
          useFactory: (clock: Clock) => createQueueDriver(config, clock),
          inject: [Clock],
        },
        EnqueueTracker,
        QueueLanes,
      ],
      exports: [QueueLanes, EnqueueTracker],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.queue.close();
  }
}
