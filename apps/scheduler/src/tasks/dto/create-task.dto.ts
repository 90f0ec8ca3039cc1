import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsIn,
  IsObject,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  MaxLength,
  ValidateNested,
} from 'class-validator';
import { CreateInfoDto, ProcessArgDto, RepetitionKind } from '@baton/task-contract';
import { TENANT_PATTERN } from '../../common';

/** Body of `POST /v1/tasks`: one task (docs/architecture.md). */
export class CreateTaskDto {
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

  @ApiPropertyOptional({
    enum: [RepetitionKind.SIMPLE, RepetitionKind.PERMANENT],
    default: RepetitionKind.SIMPLE,
    description:
      'simple: runs once (with its retries). permanent: kept alive — whenever a life ends (success, ' +
      'failure, lost heartbeat, worker gone) the next attempt starts on a healthy worker after a ' +
      'backoff, until the task is cancelled; `restarts` counts them. Timed tasks come from /v1/timers.',
  })
  @IsOptional()
  @IsIn([RepetitionKind.SIMPLE, RepetitionKind.PERMANENT], {
    message: 'repetition must be simple or permanent (timed tasks are made by /v1/timers)',
  })
  repetition?: RepetitionKind.SIMPLE | RepetitionKind.PERMANENT;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'free JSON for the worker (64 KiB at most)',
  })
  @IsOptional()
  @IsObject()
  params?: Record<string, unknown>;

  @ApiPropertyOptional({
    type: [String],
    description: 'resources held exclusively from PREPARE to the end, e.g. mysql-cluster-42',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(32)
  @IsString({ each: true })
  @Matches(/^[A-Za-z0-9._:/-]{1,200}$/, {
    each: true,
    message: 'each lock key must be 1-200 characters of [A-Za-z0-9._:/-]',
  })
  lock_keys?: string[];

  @ApiPropertyOptional({
    maxLength: 200,
    description: 'a second create with the same key (per tenant) answers the first task',
  })
  @IsOptional()
  @IsString()
  @Matches(/^[\x21-\x7e]{1,200}$/, {
    message: 'idempotency_key must be 1-200 printable ASCII characters',
  })
  idempotency_key?: string;

  @ApiPropertyOptional({ default: 'default', pattern: TENANT_PATTERN.source })
  @IsOptional()
  @Matches(TENANT_PATTERN, { message: 'tenant must be a lower-case name' })
  tenant?: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string' },
    example: { team: 'dba' },
  })
  @IsOptional()
  @IsObject()
  labels?: Record<string, string>;

  @ApiPropertyOptional({
    description:
      "POSTed once when the task reaches its final outcome (a `task.finished` message, Standard Webhooks, signed with the tenant's callback secret: POST /v1/webhooks/callback-secret), retried until delivered; http(s), and nothing internal unless BATON_WEBHOOK_ALLOW allows it",
  })
  @IsOptional()
  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true })
  @MaxLength(500)
  callback_url?: string;
}

/** Body of `POST /v1/tasks/batch`: all or nothing. */
export class CreateTaskBatchDto {
  @ApiProperty({ type: [CreateTaskDto], minItems: 1, maxItems: 500 })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(500)
  @IsObject({ each: true, message: 'each of tasks must be an object' })
  @ValidateNested({ each: true })
  @Type(() => CreateTaskDto)
  tasks!: CreateTaskDto[];
}

/** Body of `PUT /v1/tasks/{task_id}/params`. */
/** Body of `POST /v1/tasks/{task_id}/rerun` (optional). */
export class RerunDto {
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'the params of the new attempt (default: the task keeps its params)',
  })
  @IsOptional()
  @IsObject()
  params?: Record<string, unknown>;
}

export class ChangeParamsDto {
  @ApiProperty({ type: 'object', additionalProperties: true })
  @IsObject()
  params!: Record<string, unknown>;
}
