import { Module } from '@nestjs/common';
import { WorkerClient } from '@baton/task-contract';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TaskStoreModule } from '../task-store';
import { TaskTypesModule } from '../task-types';
import { WorkersModule } from '../workers';
import { WORKER_CLIENT } from './engine.tokens';
import { RateLimiter } from './rate-limiter';
import { ResourceLeases } from './resource-leases';
import { TaskEngine } from './task-engine.service';

/**
 * The engine: drives one task at a time through its states by calling its worker (ARCHITECTURE
 * §5), under a claim and fence. Exports the engine itself, the resource leases (the Checker frees
 * those of tasks that ended elsewhere) and the worker client (a cancel tells the worker).
 */
@Module({
  imports: [TaskStoreModule, TaskTypesModule, WorkersModule],
  providers: [
    {
      provide: WORKER_CLIENT,
      inject: [SCHEDULER_CONFIG],
      useFactory: (config: SchedulerConfig) =>
        new WorkerClient({ auth: config.auth, timeoutMs: config.runner.callTimeoutMs }),
    },
    RateLimiter,
    ResourceLeases,
    TaskEngine,
  ],
  exports: [TaskEngine, ResourceLeases, WORKER_CLIENT],
})
export class EngineModule {}
