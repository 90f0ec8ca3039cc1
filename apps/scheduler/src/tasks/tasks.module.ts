import { Module, OnModuleInit } from '@nestjs/common';
import { ContractErrorCode, ContractException } from '@baton/task-contract';
import { AuthModule, TenantScopes } from '../auth';
import { EngineModule } from '../engine';
import { RunnerModule } from '../runner';
import { TaskStoreModule, TasksRepository } from '../task-store';
import { TaskTypesModule } from '../task-types';
import { WorkersModule } from '../workers';
import { CallbacksController } from './callbacks.controller';
import { AttemptLogsCallbackController } from './attempt-logs-callback.controller';
import { AttemptLogsController } from './attempt-logs.controller';
import { AttemptLogsService } from './attempt-logs.service';
import { IdempotencyService } from './idempotency.service';
import { TaskChangeStream } from './task-change-stream';
import { TaskChangesController } from './task-changes.controller';
import { TaskCountsController } from './task-counts.controller';
import { TaskOverviewService } from './task-overview.service';
import { TasksController } from './tasks.controller';
import { TaskLocksController } from './task-locks.controller';
import { TaskLocksService } from './task-locks.service';
import { FastEnqueue } from './fast-enqueue';
import { TaskActionsService } from './task-actions.service';
import { TaskFactory } from './task-factory';
import { ActionSteps } from './action-steps';
import { OutcomeActions } from './outcome-actions';
import { TasksService } from './tasks.service';

/**
 * The public task API (create, list, act on tasks) and the endpoints async workers report to.
 * Exports TasksService (the Producer and the LogDumper create tasks through it) and
 * TaskActionsService (the Producer cancels a timer's earlier task through it).
 */
@Module({
  imports: [
    AuthModule,
    TaskStoreModule,
    TaskTypesModule,
    WorkersModule,
    EngineModule,
    RunnerModule,
  ],
  controllers: [
    TasksController,
    TaskLocksController,
    TaskCountsController,
    TaskChangesController,
    CallbacksController,
    AttemptLogsController,
    AttemptLogsCallbackController,
  ],
  providers: [
    TaskFactory,
    FastEnqueue,
    TasksService,
    ActionSteps,
    OutcomeActions,
    TaskActionsService,
    IdempotencyService,
    TaskLocksService,
    TaskChangeStream,
    TaskOverviewService,
    AttemptLogsService,
  ],
  exports: [TasksService, TaskActionsService],
})
export class TasksModule implements OnModuleInit {
  constructor(
    private readonly scopes: TenantScopes,
    private readonly repo: TasksRepository,
  ) {}

  /** A task belongs to its tenant: keys of another find no such task (TenantScopes). */
  onModuleInit(): void {
    this.scopes.owns(
      'task_id',
      (id) => this.repo.tenantOf(id),
      (id) =>
        new ContractException(ContractErrorCode.TASK_NOT_FOUND, `task ${id} does not exist`, {
          task_id: id,
        }),
    );
  }
}
