import { DynamicModule, Module } from '@nestjs/common';
import { RequestVerifier, WorkerAuthGuard, WorkerClient } from '@baton/task-contract';
import { LocksModule } from '@baton/locks';
import { CheckerService } from './checker/checker.service';
import { Clock } from './common/clock';
import { IdGenerator } from './common/id-generator';
import { SCHEDULER_CONFIG, SchedulerConfig } from './config/scheduler.config';
import { DatabaseModule } from './database/database.module';
import { DispatcherService } from './dispatcher/dispatcher.service';
import { HealthController } from './health/health.controller';
import { LOGDUMPER_CONTROLLERS, LOGDUMPER_PROVIDERS } from './logdumper/logdumper.providers';
import { QueueModule } from './queue/queue.module';
import { EnqueueTracker } from './runner/enqueue-tracker';
import { RateLimiter } from './runner/rate-limiter';
import { QueueLanes } from './runner/queue-lanes';
import { ResourceLeases } from './runner/resource-leases';
import { RunnerService } from './runner/runner.service';
import { WORKER_CLIENT } from './runner/runner.tokens';
import { TaskEngine } from './runner/task-engine.service';
import { TaskTypesController } from './task-types/task-types.controller';
import { TaskTypesRepository } from './task-types/task-types.repository';
import { TaskTypesService } from './task-types/task-types.service';
import { CallbacksController } from './tasks/callbacks.controller';
import { IdempotencyService } from './tasks/idempotency.service';
import { TasksController } from './tasks/tasks.controller';
import { TasksRepository } from './tasks/tasks.repository';
import { TasksService } from './tasks/tasks.service';
import { WorkersController } from './workers/workers.controller';
import { WorkersRepository } from './workers/workers.repository';
import { WorkersService } from './workers/workers.service';
import { Metrics } from './common/metrics';
import { ProducerOwnership } from './producer/ownership';
import { ProducerService } from './producer/producer.service';
import { TimersController } from './producer/timers.controller';
import { TimersRepository } from './producer/timers.repository';
import { TimersService } from './producer/timers.service';

/** The TaskScheduler: API, Dispatcher, Checker, runner and LogDumper over one database, queue and lock backend. */
@Module({})
export class SchedulerAppModule {
  static forConfig(config: SchedulerConfig): DynamicModule {
    return {
      module: SchedulerAppModule,
      imports: [
        {
          module: class ConfigHolder {},
          global: true,
          providers: [{ provide: SCHEDULER_CONFIG, useValue: config }],
          exports: [SCHEDULER_CONFIG],
        },
        DatabaseModule,
        QueueModule.forRoot(config.queue),
        LocksModule.forRoot(config.locks),
      ],
      controllers: [
        HealthController,
        TasksController,
        CallbacksController,
        TaskTypesController,
        WorkersController,
        TimersController,
        ...LOGDUMPER_CONTROLLERS,
      ],
      providers: [
        Clock,
        IdGenerator,
        {
          provide: WORKER_CLIENT,
          useFactory: () =>
            new WorkerClient({ auth: config.auth, timeoutMs: config.runner.callTimeoutMs }),
        },
        { provide: RequestVerifier, useFactory: () => new RequestVerifier(config.auth) },
        WorkerAuthGuard,
        TasksRepository,
        TaskTypesRepository,
        WorkersRepository,
        TaskTypesService,
        WorkersService,
        ResourceLeases,
        EnqueueTracker,
        RateLimiter,
        QueueLanes,
        TaskEngine,
        RunnerService,
        DispatcherService,
        CheckerService,
        TasksService,
        IdempotencyService,
        Metrics,
        TimersRepository,
        ProducerOwnership,
        ProducerService,
        TimersService,
        ...LOGDUMPER_PROVIDERS,
      ],
    };
  }
}
