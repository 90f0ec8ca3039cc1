import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  IsArray,
  IsEnum,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { NotifyEvent } from '../enums/task-kind.enum';
import { CreateInfoDto } from './create-info.dto';
import { ProcessArgDto } from './process-arg.dto';

/** Task ids are opaque, URL-safe strings; the scheduler uses ULIDs. */
export const TASK_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Free JSON handed to the worker untouched. */
export type TaskParams = Record<string, unknown>;

/** Body of `create`: `POST /v1/task/{task_type}`. */
export class CreateTaskRequestDto {
  @ApiProperty({ example: '01JD2Z6W8ZK3Y4N5P6Q7R8S9T0', pattern: TASK_ID_PATTERN.source })
  @IsString()
  @Matches(TASK_ID_PATTERN, { message: 'task_id must be 1-64 characters of [A-Za-z0-9_-]' })
  task_id!: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 10000,
    default: 1,
    description:
      'run attempt. The same or a lower attempt is idempotent (answers the stored task, changes ' +
      'nothing but a higher fence, which it keeps); a higher attempt on a task in CREATE, PREPARE, ' +
      'FAIL, NONE, POSTPONE, PAUSE, RUNNING, SUCCESS or FINISH starts it again from CREATE with ' +
      'the new body; from ROLLBACK it is 409 (40900).',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(10000)
  attempt?: number;

  @ApiProperty({ type: CreateInfoDto })
  @IsObject()
  @ValidateNested()
  @Type(() => CreateInfoDto)
  create_info!: CreateInfoDto;

  @ApiPropertyOptional({ type: ProcessArgDto })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => ProcessArgDto)
  process_arg?: ProcessArgDto;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, example: { cluster: 42 } })
  @IsOptional()
  @IsObject()
  params?: TaskParams;

  @ApiPropertyOptional({
    type: [String],
    description: 'resources the scheduler holds for the task',
  })
  @IsOptional()
  @IsArray()
  @IsString({ each: true })
  @MaxLength(200, { each: true })
  lock_keys?: string[];
}

/** Body of the state-changing actions that take no arguments (running, pause, continue, prepare, rollback, clean). */
export class ActionRequestDto {
  @ApiPropertyOptional({ maxLength: 500, description: 'why, for the task log' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  reason?: string;
}

/** Body of `change`: new params for a task not yet final. */
export class ChangeRequestDto {
  @ApiProperty({ type: 'object', additionalProperties: true })
  @IsObject()
  params!: TaskParams;

  @ApiPropertyOptional({ maxLength: 500 })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  reason?: string;
}

/** Body of `notify`: the scheduler tells the task about an event. */
export class NotifyRequestDto {
  @ApiProperty({ enum: NotifyEvent, enumName: 'NotifyEvent' })
  @IsEnum(NotifyEvent)
  event!: NotifyEvent;

  @ApiPropertyOptional({ maxLength: 500 })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  message?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true })
  @IsOptional()
  @IsObject()
  data?: Record<string, unknown>;
}
