import { TaskTypeEntity } from './task-type.entity';

export { TaskTypeDefaultsDto } from './dto/task-type.dto';
export * from './task-type.model';
export * from './task-types.module';
export * from './task-types.service';
export type { TimeoutPolicy } from './task-type.entity';
export * from './worker-rules';
export { placeholderPointers } from './params-schema';

/** The tables this module owns, for the data source. */
export const TASK_TYPES_ENTITIES = [TaskTypeEntity];
