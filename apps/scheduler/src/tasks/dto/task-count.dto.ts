import { ApiProperty } from '@nestjs/swagger';
import { TaskStatus } from '@baton/task-contract';
import { TaskCount } from '../../task-store';

/** How many tasks of one type are in one status now. */
export class TaskCountDto {
  @ApiProperty() task_type!: string;
  @ApiProperty({ enum: TaskStatus }) status!: TaskStatus;
  @ApiProperty({ type: 'integer', minimum: 1 }) count!: number;
}

export const toTaskCountDto = (c: TaskCount): TaskCountDto => ({
  task_type: c.taskType,
  status: c.status as TaskStatus,
  count: c.n,
});
