import { TaskAttemptEntity } from './task-attempt.entity';
import { TaskEventEntity } from './task-event.entity';
import { TaskLabelEntity } from './task-label.entity';
import { TaskEntity } from './task.entity';

export * from './task-store.module';
export * from './task.model';
export * from './tasks.repository';

/** The tables this module owns, for the data source. */
export const TASK_STORE_ENTITIES = [
  TaskEntity,
  TaskEventEntity,
  TaskLabelEntity,
  TaskAttemptEntity,
];
