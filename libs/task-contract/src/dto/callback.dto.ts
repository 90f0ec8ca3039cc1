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
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { TaskStatus } from '../enums/task-status.enum';

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
