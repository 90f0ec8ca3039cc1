import { Module } from '@nestjs/common';
import { EngineModule } from '../engine';
import { RunnerModule } from '../runner';
import { TaskStoreModule } from '../task-store';
import { TaskTypesModule } from '../task-types';
import { WorkersModule } from '../workers';
import { CallbacksController } from './callbacks.controller';
import { IdempotencyService } from './idempotency.service';
import { TasksController } from './tasks.controller';
import { TasksService } from './tasks.service';

/**
 * The public task API (create, list, act on tasks) and the endpoints async workers report to.
 * Exports TasksService: the Producer and the LogDumper create tasks through it.
 */
@Module({
  imports: [TaskStoreModule, TaskTypesModule, WorkersModule, EngineModule, RunnerModule],
  controllers: [TasksController, CallbacksController],
  providers: [TasksService, IdempotencyService],
  exports: [TasksService],
})
export class TasksModule {}
