import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsISO8601,
  IsIn,
  IsInt,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  Max,
  Matches,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { TaskStatus } from '../enums/task-status.enum';
import { TASK_ID_PATTERN } from './worker-requests.dto';

/** Outcomes an async worker reports. */
export const CALLBACK_OUTCOMES = [TaskStatus.SUCCESS, TaskStatus.FAIL] as const;

export class CallbackErrorDto {
  @ApiProperty({ maxLength: 2000 })
  @IsString()
  @MaxLength(2000)
  message!: string;

  @ApiPropertyOptional({ maxLength: 100 })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  code?: string;
}

/**
 * Body of `PUT /v1/tasks/{task_id}/notify` on the scheduler: an async worker reports the outcome.
 * Sent with the X-Baton-Fence the worker was given; a stale fence is refused with 409.
 */
export class CompletionCallbackDto {
  @ApiProperty({ type: 'integer', minimum: 1 })
  @IsInt()
  @Min(1)
  attempt!: number;

  @ApiProperty({ enum: CALLBACK_OUTCOMES })
  @IsIn(CALLBACK_OUTCOMES as readonly TaskStatus[])
  task_status!: TaskStatus.SUCCESS | TaskStatus.FAIL;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true })
  @IsOptional()
  @IsObject()
  result?: Record<string, unknown>;

  @ApiPropertyOptional({ type: CallbackErrorDto })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => CallbackErrorDto)
  error?: CallbackErrorDto;
}

/** Body of `PUT /v1/tasks/{task_id}/heartbeat` on the scheduler. */
export class HeartbeatCallbackDto {
  @ApiProperty({ type: 'integer', minimum: 1 })
  @IsInt()
  @Min(1)
  attempt!: number;
}

/** Body of `PUT /v1/tasks/{task_id}/progress` on the scheduler. */
export class ProgressCallbackDto {
  @ApiProperty({ type: 'integer', minimum: 1 })
  @IsInt()
  @Min(1)
  attempt!: number;

  @ApiProperty({ minimum: 0, maximum: 100 })
  @IsNumber()
  @Min(0)
  @Max(100)
  percent!: number;

  @ApiPropertyOptional({ maxLength: 200 })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  step?: string;

  @ApiPropertyOptional({ maxLength: 2000 })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  message?: string;
}

/** Levels of a line a worker logs, least severe first. */
export const LOG_LINE_LEVELS = ['debug', 'info', 'warn', 'error'] as const;

/** One line a worker logged while it ran an attempt. */
export class LogLineDto {
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description:
      'the line’s number within the attempt, from 0, one more per line: a line sent again with the same seq is kept once',
  })
  @IsInt()
  @Min(0)
  @Max(2_000_000_000)
  seq!: number;

  @ApiProperty({ format: 'date-time', description: 'when the worker logged it' })
  @IsISO8601({ strict: true })
  at!: string;

  @ApiProperty({ enum: LOG_LINE_LEVELS })
  @IsIn(LOG_LINE_LEVELS as readonly string[])
  level!: (typeof LOG_LINE_LEVELS)[number];

  @ApiProperty({ maxLength: 4000, description: 'the text (a longer line is cut by the worker)' })
  @IsString()
  @MaxLength(4000)
  message!: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'structured fields of the line',
  })
  @IsOptional()
  @IsObject()
  fields?: Record<string, unknown>;
}

/**
 * Body of `PUT /v1/tasks/{task_id}/logs` on the scheduler: lines a worker logged while it ran an
 * attempt, in a batch. Sent with the X-Baton-Fence the attempt was driven with; lines of an
 * attempt that has ended are taken too (they are shipped after it).
 */
export class LogBatchDto {
  @ApiProperty({ type: 'integer', minimum: 1 })
  @IsInt()
  @Min(1)
  attempt!: number;

  @ApiProperty({ type: [LogLineDto], minItems: 1, maxItems: 500 })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(500)
  @IsObject({ each: true, message: 'each of lines must be an object' })
  @ValidateNested({ each: true })
  @Type(() => LogLineDto)
  lines!: LogLineDto[];
}

/** Most attempts in one `PUT /v1/attempt-logs`, and most lines over all of them. */
export const ATTEMPT_LOGS_MAX_BATCHES = 100;
export const ATTEMPT_LOGS_MAX_LINES = 2000;

/** The lines of one attempt within `PUT /v1/attempt-logs`: a LogBatchDto with its task and fence. */
export class AttemptLogBatchDto extends LogBatchDto {
  @ApiProperty({ pattern: TASK_ID_PATTERN.source })
  @IsString()
  @Matches(TASK_ID_PATTERN, { message: 'task_id must be 1-64 characters of [A-Za-z0-9_-]' })
  task_id!: string;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description:
      'a fence the attempt was driven with (what X-Baton-Fence carries on the per-task call)',
  })
  @IsInt()
  @Min(0)
  fence!: number;
}

/**
 * Body of `PUT /v1/attempt-logs` on the scheduler: the lines of many attempts (of any tasks) in
 * one call, each with its task, attempt and fence, as the per-task call takes them. What a worker
 * running many short attempts sends instead of a call per attempt.
 */
export class AttemptLogBatchesDto {
  @ApiProperty({
    type: [AttemptLogBatchDto],
    minItems: 1,
    maxItems: ATTEMPT_LOGS_MAX_BATCHES,
    description: `at most ${ATTEMPT_LOGS_MAX_LINES} lines over all the batches`,
  })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(ATTEMPT_LOGS_MAX_BATCHES)
  @IsObject({ each: true, message: 'each of batches must be an object' })
  @ValidateNested({ each: true })
  @Type(() => AttemptLogBatchDto)
  batches!: AttemptLogBatchDto[];
}

/** What became of one attempt's lines sent in `PUT /v1/attempt-logs`. */
export interface AttemptLogVerdict {
  task_id: string;
  attempt: number;
  /** Lines kept now, and lines sent before (same seq), kept once; absent when refused. */
  accepted?: number;
  duplicates?: number;
  /** Why the lines were dropped: `unknown` task, or `stale` (not an attempt and fence it was given). */
  refused?: 'unknown' | 'stale';
}
