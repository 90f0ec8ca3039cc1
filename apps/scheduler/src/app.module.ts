import { DynamicModule, Module } from '@nestjs/common';
import { LocksModule } from '@baton/locks';
import { AuthModule } from './auth';
import { CheckerModule } from './checker';
import { Clock, CommonModule } from './common';
import { ConfigModule, SchedulerConfig } from './config';
import { DatabaseModule } from './database';
import { DispatcherModule } from './dispatcher';
import { EngineModule } from './engine';
import { ENTITIES } from './entities';
import { HealthModule } from './health';
import { LogDumperModule } from './logdumper';
import { LoggingModule } from './logging';
import { MetricsModule } from './metrics';
import { ProducerModule } from './producer';
import { QueueModule } from './queue';
import { RunnerModule } from './runner';
import { TaskMetricsModule } from './task-metrics';
import { RetentionModule } from './retention';
import { TaskStoreModule } from './task-store';
import { TaskTypesModule } from './task-types';
import { TasksModule } from './tasks';
import { TopologiesModule } from './topologies';
import { TenantsModule } from './tenants';
import { WebhooksModule } from './webhooks';
import { WorkersModule } from './workers';

/**
 * The TaskScheduler, composed of its modules (docs/architecture.md). Infrastructure first, each
 * global and configured here once; then the task model; then the parts that move tasks; then the
 * APIs and the producers of tasks.
 */
@Module({})
export class SchedulerAppModule {
  /** `clock`: the app's one time source (tests hand in a ManualClock); the real one by default. */
  static forConfig(config: SchedulerConfig, clock?: Clock): DynamicModule {
    return {
      module: SchedulerAppModule,
      imports: [
        // Infrastructure: config, time and ids, counters, the database, the queue, the locks.
        ConfigModule.forRoot(config),
        LoggingModule.forConfig(config),
        CommonModule.forRoot(clock),
        MetricsModule,
        DatabaseModule.forRoot(config.database, ENTITIES),
        QueueModule.forRoot(config.queue),
        LocksModule.forRoot(config.locks),
        // Who may call the public API (API keys and their roles; one global guard).
        AuthModule,
        // What tasks are, where they live, who runs them.
        TaskStoreModule,
        TaskTypesModule,
        TenantsModule,
        WorkersModule,
        // What moves them: the engine drives, the runner pulls, the Dispatcher and Checker feed.
        EngineModule,
        RunnerModule,
        DispatcherModule,
        CheckerModule,
        // What keeps the tables at the size of the work: finished tasks purged after their age.
        RetentionModule,
        // Where they come from: the API, timers, logs.
        TasksModule,
        ProducerModule,
        LogDumperModule,
        TopologiesModule,
        // Who learns of what happened to them: through the task store's durable change feed.
        TaskMetricsModule,
        WebhooksModule,
        HealthModule,
      ],
    };
  }
}
