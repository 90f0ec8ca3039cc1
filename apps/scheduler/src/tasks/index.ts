import { IdempotencyRecordEntity } from './idempotency-record.entity';

export * from './dto/create-task.dto';
export * from './dto/create-task.fast';
export { ListTasksQuery, TaskListFilterQuery, taskFilterOf } from './dto/list-tasks.query';
export { toTaskDto, TaskDto } from './dto/task.dto';
export * from './tasks.module';
export * from './task-actions.service';
export * from './tasks.service';

/** The tables this module owns, for the data source. */
export const TASKS_ENTITIES = [IdempotencyRecordEntity];
