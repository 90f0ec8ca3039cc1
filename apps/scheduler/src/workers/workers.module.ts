import { Module, OnModuleInit } from '@nestjs/common';
import { RequestVerifier, WorkerAuthGuard } from '@baton/task-contract';
import { Clock } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { Metrics, cachedFor } from '../metrics';
import { TaskTypesModule } from '../task-types';
import { WorkerControl } from './worker-control';
import { WorkerHealthWatch } from './worker-health-watch';
import { WorkersController } from './workers.controller';
import { WorkersRepository } from './workers.repository';
import { WorkersService } from './workers.service';

/**
 * The worker fleet: registration, health, capacity and the choice of a worker for an attempt
 * (under the types' version rules and ramps); drains and blacklists people set; and the check of
 * workers' signed calls (the guard the callback endpoints use too).
 */
@Module({
  imports: [TaskTypesModule],
  controllers: [WorkersController],
  providers: [
    WorkersRepository,
    WorkersService,
    WorkerControl,
    WorkerHealthWatch,
    {
      provide: RequestVerifier,
      // Signature windows are read on the app's clock, as the workers sign on theirs.
      inject: [SCHEDULER_CONFIG, Clock],
      useFactory: (config: SchedulerConfig, clock: Clock) =>
        new RequestVerifier(config.auth, clock),
    },
    WorkerAuthGuard,
  ],
  exports: [WorkersService, WorkerHealthWatch, RequestVerifier, WorkerAuthGuard],
})
export class WorkersModule implements OnModuleInit {
  constructor(
    private readonly workers: WorkersService,
    private readonly metrics: Metrics,
  ) {}

  /** `baton_workers{task_type,health}`: the registry as every instance reads it. */
  onModuleInit(): void {
    this.metrics.source(
      'baton_workers',
      cachedFor(5000, async () => {
        const counts = new Map<string, { task_type: string; health: string; n: number }>();
        for (const { worker, health } of await this.workers.list())
          for (const task_type of worker.taskTypes) {
            const key = `${task_type}\u0000${health}`;
            const c = counts.get(key) ?? { task_type, health, n: 0 };
            c.n++;
            counts.set(key, c);
          }
        return [...counts.values()].map(({ n, ...labels }) => ({ labels, value: n }));
      }),
    );
  }
}
