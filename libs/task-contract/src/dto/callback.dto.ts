import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
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
