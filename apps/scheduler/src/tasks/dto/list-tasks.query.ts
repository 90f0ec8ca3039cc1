import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  IsDateString,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
} from 'class-validator';
import {
  ContractErrorCode,
  ContractException,
  TASK_OUTCOMES,
  TASK_ID_PATTERN,
  TASK_STATUSES,
  TASK_TYPE_PATTERN,
  TaskOutcome,
  TaskStatus,
  parseTaskOutcome,
  parseTaskStatus,
} from '@baton/task-contract';
import { DecimalInt, TENANT_PATTERN } from '../../common';
import { SEARCH_MIN_WORD, TASK_SORTS, TaskFilter, TaskSort, searchWords } from '../../task-store';
import { TASK_CURSOR_PATTERN } from './task-cursor';

/** A worker instance's id, as workers register it. */
const WORKER_ID_PATTERN = /^[A-Za-z0-9._:-]{1,100}$/;

/** The filters and page size the task list shares with the topology-run list. */
export class TaskListFilterQuery {
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

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 500, default: 50 })
  @IsOptional()
  @DecimalInt()
  @IsInt()
  @Min(1)
  @Max(500)
  limit?: number;
}

/** Query string of `GET /v1/tasks`. */
export class ListTasksQuery extends TaskListFilterQuery {
  @ApiPropertyOptional({
    description:
      'names that start with this (case counts); served by the name index, any length of prefix',
    maxLength: 200,
  })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name_prefix?: string;

  @ApiPropertyOptional({
    description:
      "a task id (finds that task) or words, all of which a task's name must hold, each as a word or the start of one; case and accents do not count. Words of fewer than 3 characters and very common English words are not indexed and are left out; a search with no other word is refused (40000)",
    maxLength: 200,
    example: 'nightly backup',
  })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  search?: string;

  @ApiPropertyOptional({
    enum: TASK_SORTS,
    default: 'created',
    description:
      'created: by id, which follows creation time; updated: last change; priority: important_level',
  })
  @IsOptional()
  @IsIn(TASK_SORTS)
  sort?: TaskSort;

  @ApiPropertyOptional({ enum: ['desc', 'asc'], default: 'desc' })
  @IsOptional()
  @IsIn(['desc', 'asc'])
  order?: 'desc' | 'asc';

  @ApiPropertyOptional({ pattern: TASK_ID_PATTERN.source, description: 'children of this task' })
  @IsOptional()
  @Matches(TASK_ID_PATTERN)
  parent_task_id?: string;

  @ApiPropertyOptional({
    pattern: TASK_ID_PATTERN.source,
    description: "tasks this control task (a topology run's centre) drives",
  })
  @IsOptional()
  @Matches(TASK_ID_PATTERN)
  control_task_id?: string;

  @ApiPropertyOptional({
    pattern: WORKER_ID_PATTERN.source,
    description: 'tasks whose current or last attempt went to this worker instance',
  })
  @IsOptional()
  @Matches(WORKER_ID_PATTERN)
  worker?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 1000000,
    description: 'tasks that opened at least this many attempts (2: retried at least once)',
  })
  @IsOptional()
  @DecimalInt()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  attempts_min?: number;

  @ApiPropertyOptional({
    description:
      'next_cursor of the previous page, with the same sort and order (a cursor of another order is refused)',
  })
  @IsOptional()
  @Matches(TASK_CURSOR_PATTERN, { message: 'cursor is not one this API gave out' })
  cursor?: string;
}

/** The repository's filter for a list query (the filters either list offers). */
export function taskFilterOf(
  q: TaskListFilterQuery &
    Partial<Pick<ListTasksQuery, 'name_prefix' | 'parent_task_id' | 'control_task_id'>> &
    Partial<Pick<ListTasksQuery, 'worker' | 'attempts_min'>>,
): TaskFilter {
  const [key, ...rest] = q.label ? q.label.split(':') : [];
  return {
    taskType: q.task_type,
    status: q.status,
    outcome: q.outcome,
    tenant: q.tenant,
    label: q.label ? { key, value: rest.join(':') } : undefined,
    createdFrom: q.created_from ? Date.parse(q.created_from) : undefined,
    createdTo: q.created_to ? Date.parse(q.created_to) : undefined,
    namePrefix: q.name_prefix,
    parentTaskId: q.parent_task_id,
    controlTaskId: q.control_task_id,
    workerId: q.worker,
    attemptsMin: q.attempts_min,
  };
}

/** A task id as the scheduler makes them (a ULID), in either case. */
const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/i;

/**
 * The filter of a search box's text: a task id finds that task; other text, the names that hold
 * its words (`searchWords`). Refuses (40000) text with no word the name index holds.
 */
export function searchFilterOf(search: string | undefined): TaskFilter {
  if (search === undefined) return {};
  const text = search.trim();
  if (ULID.test(text)) return { taskId: text.toUpperCase() };
  const words = searchWords(text);
  if (words.length === 0)
    throw new ContractException(
      ContractErrorCode.VALIDATION_FAILED,
      `search has no word to look for: names are searched by words of ${SEARCH_MIN_WORD} or more characters, very common English words left out`,
      { search },
    );
  return { nameWords: words };
}
