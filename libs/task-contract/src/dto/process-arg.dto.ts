import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDateString, IsEnum, IsIn, IsInt, IsOptional, Max, Min } from 'class-validator';
import { TaskStatus, exactTaskStatus } from '../enums/task-status.enum';

/**
 * Statuses a task may be created in: ready to go, waiting (POSTPONE, e.g. for its start time),
 * or held until someone continues it.
 */
export const INITIAL_STATUSES = [TaskStatus.INIT, TaskStatus.POSTPONE, TaskStatus.PAUSE] as const;

/** How the task is to be run (docs/architecture.md, `process_arg`). */
export class ProcessArgDto {
  @ApiPropertyOptional({
    format: 'date-time',
    description: 'not before this instant (ISO 8601); earlier tasks wait in POSTPONE',
  })
  @IsOptional()
  @IsDateString({ strict: true })
  start_time?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 604800,
    description: 'maximum run time, seconds',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(604800)
  deadline_second?: number;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 86400,
    description: 'resource lease time, seconds',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(86400)
  lock_timeout?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: 100, default: 0 })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(100)
  max_retry?: number;

  @ApiPropertyOptional({
    enum: INITIAL_STATUSES,
    description:
      'initial status; PAUSE creates the task held, POSTPONE waiting. `Postpose` is read as POSTPONE.',
  })
  @IsOptional()
  @Transform(({ value }: { value: unknown }) => exactTaskStatus(value) ?? value)
  @IsEnum(TaskStatus)
  @IsIn(INITIAL_STATUSES as readonly TaskStatus[], {
    message: `task_status must be one of ${INITIAL_STATUSES.join(', ')}`,
  })
  task_status?: TaskStatus;
}
