import { TaskAttemptEntity } from './task-attempt.entity';
import { TaskLogChunkEntity, TaskLogUsageEntity } from './attempt-log.entity';
import { TaskChangeEntity } from './task-change.entity';
import { TaskEventEntity } from './task-event.entity';
import { TaskLabelEntity } from './task-label.entity';
import { TaskEntity } from './task.entity';

export type { TaskChange } from './task-change';
export type {
  NewTaskStatusChange,
  TaskChangeConsumer,
  TaskChangeWriter,
  TaskStatusChange,
} from './task-change-feed';
export { TaskChangeFeed } from './task-change-feed';
export { STORED_JSON_MAX_BYTES } from './task-row.mapping';
export { isUniqueViolation } from './sql-runner';
export { holdsLockKeys } from './lock-key-holder';
export * from './attempt-drops.repository';
export * from './attempt-logs.repository';
export * from './task-log.repository';
export * from './task-purge.repository';
export * from './task-counts.repository';
export * from './task-event-tail';
export * from './task-history.repository';
export * from './task-store.module';
export * from './task.model';
export { NEWEST_FIRST, taskListQuery } from './task-list.query';
export * from './task-search';
export * from './tasks.repository';

/** The tables this module owns, for the data source. */
export const TASK_STORE_ENTITIES = [
  TaskEntity,
  TaskEventEntity,
  TaskLabelEntity,
  TaskAttemptEntity,
  TaskChangeEntity,
  TaskLogChunkEntity,
  TaskLogUsageEntity,
];
