import { Module } from '@nestjs/common';
import { RequestVerifier, WorkerAuthGuard } from '@baton/task-contract';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TaskTypesModule } from '../task-types';
import { WorkerHealthWatch } from './worker-health-watch';
import { WorkersController } from './workers.controller';
import { WorkersRepository } from './workers.repository';
import { WorkersService } from './workers.service';

/**
 * The worker fleet: registration, health, capacity and the choice of a worker for an attempt;
 * and the check of workers' signed calls (the guard the callback endpoints use too).
 */
@Module({
  imports: [TaskTypesModule],
  controllers: [WorkersController],
  providers: [
    WorkersRepository,
    WorkersService,
    WorkerHealthWatch,
    {
      provide: RequestVerifier,
      inject: [SCHEDULER_CONFIG],
      useFactory: (config: SchedulerConfig) => new RequestVerifier(config.auth),
    },
    WorkerAuthGuard,
  ],
  exports: [WorkersService, WorkerHealthWatch, RequestVerifier, WorkerAuthGuard],
})
export class WorkersModule {}
