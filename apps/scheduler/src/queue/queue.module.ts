import { DynamicModule, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { QueueConfig } from './queue.config';
import { QUEUE_DRIVER, QueueDriver } from './queue.driver';
import { createQueueDriver } from './queue.factory';

/** Provides the configured QueueDriver under `QUEUE_DRIVER` and closes it on shutdown. */
@Module({})
export class QueueModule implements OnApplicationShutdown {
  constructor(@Inject(QUEUE_DRIVER) private readonly queue: QueueDriver) {}

  /** `config` is the typed, already validated queue section of the scheduler's config. */
  static forRoot(config: QueueConfig): DynamicModule {
    return {
      module: QueueModule,
      // Dispatcher, Checker and runner all use the one queue; importing it once is enough.
      global: true,
      providers: [{ provide: QUEUE_DRIVER, useFactory: () => createQueueDriver(config) }],
      exports: [QUEUE_DRIVER],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.queue.close();
  }
}
