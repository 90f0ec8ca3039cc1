import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { TASK_OUTCOMES, TaskOutcome } from '@baton/task-contract';
import { DecimalInt } from '../../common';
import { FinishedInMinute, HISTORY_MINUTES, WaitingCount } from '../../task-store';

/** Query of `GET /v1/task-counts/history`. */
export class TaskHistoryQuery {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: HISTORY_MINUTES,
    default: 60,
    description: 'how many minutes back, the current one included',
  })
  @IsOptional()
  @DecimalInt()
  @IsInt()
  @Min(1)
  @Max(HISTORY_MINUTES)
  minutes?: number;
}

/** Tasks of one type that finished with one outcome within one minute. */
export class TaskMinuteDto {
  @ApiProperty({ format: 'date-time', description: "the minute's start (UTC)" }) minute!: string;
  @ApiProperty() task_type!: string;
  @ApiProperty({ enum: TASK_OUTCOMES }) outcome!: TaskOutcome;
  @ApiProperty({ type: 'integer', minimum: 1 }) count!: number;
}

/** The answer of `GET /v1/task-counts/history`. */
export class TaskHistoryDto {
  @ApiProperty({ format: 'date-time', description: 'the first minute covered (its start)' })
  from!: string;
  @ApiProperty({ format: 'date-time', description: 'now: the last minute covered is under way' })
  to!: string;
  @ApiProperty({ type: 'integer' }) minutes!: number;
  @ApiProperty({
    type: [TaskMinuteDto],
    description:
      'every count above zero, oldest minute first; a minute, type or outcome missing had none',
  })
  buckets!: TaskMinuteDto[];
}

export const toTaskMinuteDto = (r: FinishedInMinute): TaskMinuteDto => ({
  minute: new Date(r.minute).toISOString(),
  task_type: r.taskType,
  outcome: r.outcome as TaskOutcome,
  count: r.n,
});

/** Tasks of one type and priority that are due and wait for an attempt. */
export class BacklogDto {
  @ApiProperty() task_type!: string;
  @ApiProperty({ type: 'integer', minimum: 0, maximum: 9 }) priority!: number;
  @ApiProperty({ type: 'integer', minimum: 1 }) count!: number;
  @ApiProperty({
    format: 'date-time',
    description: 'the earliest time one of them was due (its start_time, else its creation)',
  })
  oldest_due_at!: string;
  @ApiProperty({ description: 'how long that one has waited, in seconds' })
  oldest_wait_seconds!: number;
}

export const toBacklogDto = (w: WaitingCount, now: number): BacklogDto => ({
  task_type: w.taskType,
  priority: w.priority,
  count: w.n,
  oldest_due_at: new Date(w.oldestDueAt).toISOString(),
  oldest_wait_seconds: Math.max(0, Math.round((now - w.oldestDueAt) / 100) / 10),
});
