import { LookupFunction } from 'node:net';
import { Clock } from '../common';
import { Metrics } from '../metrics';
import { Module } from '@nestjs/common';
import { guardedLookup, WorkerClient } from '@baton/task-contract';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TaskStoreModule } from '../task-store';
import { TaskTypesModule } from '../task-types';
import { TenantsModule } from '../tenants';
import { WorkersModule } from '../workers';
import { AttemptDrops } from './attempt-drops';
import { AttemptRunner } from './attempt-runner';
import { AttemptStarter } from './attempt-starter';
import { WORKER_CLIENT } from './engine.tokens';
import { FailurePolicy } from './failure-policy';
import { LeaseKeeper } from './lease-keeper';
import { PermanentLives } from './permanent-lives';
import { RateLimiter } from './rate-limiter';
import { ResourceLeases } from './resource-leases';
import { TaskClaims } from './task-claims';
import { TaskCleanup } from './task-cleanup';
import { TaskEngine } from './task-engine.service';
import { TaskPoller } from './task-poller';
import { TaskSteps } from './task-steps';
import { WorkerReports } from './worker-reports';
import { WorkerStateAdoption } from './worker-state-adoption';

/**
 * The engine: drives one task at a time through its states by calling its worker, under a claim
 * and fence (docs/architecture.md). Exports the engine itself, the reports of async workers (the
 * callback endpoints), the resource leases (the Checker frees those of tasks that ended
 * elsewhere) and the worker client (a cancel tells the worker). Its parts stay inside.
 */
@Module({
  imports: [TaskStoreModule, TaskTypesModule, TenantsModule, WorkersModule],
  providers: [
    {
      provide: WORKER_CLIENT,
      inject: [SCHEDULER_CONFIG, Metrics, Clock],
      // Each connection to a worker is checked on the address it is made to: a registered name
      // that resolves outside the worker networks now (169.254.169.254, say) is refused.
      useFactory: (config: SchedulerConfig, metrics: Metrics, clock: Clock) =>
        new WorkerClient({
          // Signatures, deadlines and call durations on the app's clock, as the workers read theirs.
          clock,
          onCall: (action, outcome, ms) =>
            metrics.observe('baton_worker_call_duration_seconds', { action, outcome }, ms / 1000),
          auth: config.auth,
          timeoutMs: config.runner.callTimeoutMs,
          lookup: guardedLookup({
            networks: config.outgoing.workers,
            hosts: new Set(),
          }) as unknown as LookupFunction,
        }),
    },
    RateLimiter,
    ResourceLeases,
    TaskSteps,
    LeaseKeeper,
    TaskClaims,
    PermanentLives,
    TaskCleanup,
    FailurePolicy,
    WorkerStateAdoption,
    WorkerReports,
    AttemptRunner,
    AttemptDrops,
    TaskPoller,
    AttemptStarter,
    TaskEngine,
  ],
  exports: [TaskEngine, WorkerReports, ResourceLeases, WORKER_CLIENT],
})
export class EngineModule {}
