import { ApiProperty } from '@nestjs/swagger';
import { TASK_OUTCOMES, TaskOutcome, TaskStatus } from '@baton/task-contract';
import { TaskCount } from '../../task-store';

/** How many tasks of one type are in one status now. */
export class TaskCountDto {
  @ApiProperty() task_type!: string;
  @ApiProperty({ enum: TaskStatus }) status!: TaskStatus;
  @ApiProperty({
    enum: TASK_OUTCOMES,
    nullable: true,
    description:
      'for FINISH, the outcome this count is of (FINISH comes once per outcome); null otherwise',
  })
  outcome!: TaskOutcome | null;
  @ApiProperty({ type: 'integer', minimum: 1 }) count!: number;
}

export const toTaskCountDto = (c: TaskCount): TaskCountDto => ({
  task_type: c.taskType,
  status: c.status as TaskStatus,
  outcome: (c.outcome ?? null) as TaskOutcome | null,
  count: c.n,
});
