import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDateString, IsIn, IsInt, IsOptional, Matches, Max, Min } from 'class-validator';
import {
  TASK_OUTCOMES,
  TASK_STATUSES,
  TASK_TYPE_PATTERN,
  TaskOutcome,
  TaskStatus,
  parseTaskOutcome,
  parseTaskStatus,
} from '@baton/task-contract';
import { DecimalInt, TENANT_PATTERN } from '../../common';
import { TaskFilter } from '../../task-store';

/** Query string of `GET /v1/tasks`. */
export class ListTasksQuery {
  @ApiPropertyOptional({ pattern: TASK_TYPE_PATTERN.source })
  @IsOptional()
  @Matches(TASK_TYPE_PATTERN)
  task_type?: string;

  @ApiPropertyOptional({
    description: 'comma-separated statuses (Postpose is read as POSTPONE)',
    example: 'RUNNING,POSTPONE',
  })
  @IsOptional()
  @Transform(({ value }: { value: unknown }) =>
    String(value)
      .split(',')
      .map((s) => parseTaskStatus(s) ?? s.trim()),
  )
  @IsIn(TASK_STATUSES as TaskStatus[], { each: true })
  status?: TaskStatus[];

  @ApiPropertyOptional({
    description:
      'comma-separated outcomes of finished tasks: SUCCESS, FAIL, ROLLBACK, CANCELLED (stopped by request)',
    example: 'FAIL,CANCELLED',
  })
  @IsOptional()
  @Transform(({ value }: { value: unknown }) =>
    String(value)
      .split(',')
      .map((s) => parseTaskOutcome(s) ?? s.trim()),
  )
  @IsIn(TASK_OUTCOMES as TaskOutcome[], { each: true })
  outcome?: TaskOutcome[];

  @ApiPropertyOptional({
    pattern: TENANT_PATTERN.source,
    description: "only this tenant's (a key of one tenant sees its own only)",
  })
  @IsOptional()
  @Matches(TENANT_PATTERN)
  tenant?: string;

  @ApiPropertyOptional({ description: 'key:value', example: 'team:dba' })
  @IsOptional()
  @Matches(/^[^:]{1,100}:.{1,200}$/, { message: 'label must be key:value' })
  label?: string;

  @ApiPropertyOptional({ format: 'date-time' })
  @IsOptional()
  @IsDateString({ strict: true })
  created_from?: string;

  @ApiPropertyOptional({ format: 'date-time' })
  @IsOptional()
  @IsDateString({ strict: true })
  created_to?: string;

  @ApiPropertyOptional({ description: 'next_cursor of the previous page' })
  @IsOptional()
  @Matches(/^[0-9A-Z]{26}$/, { message: 'cursor is not one this API gave out' })
  cursor?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 500, default: 50 })
  @IsOptional()
  @DecimalInt()
  @IsInt()
  @Min(1)
  @Max(500)
  limit?: number;
}

/** The repository's filter for a list query. */
export function taskFilterOf(q: ListTasksQuery): TaskFilter {
  const [key, ...rest] = q.label ? q.label.split(':') : [];
  return {
    taskType: q.task_type,
    status: q.status,
    outcome: q.outcome,
    tenant: q.tenant,
    label: q.label ? { key, value: rest.join(':') } : undefined,
    createdFrom: q.created_from ? Date.parse(q.created_from) : undefined,
    createdTo: q.created_to ? Date.parse(q.created_to) : undefined,
  };
}
